"""Wrong answers for chapter 01's exercises must fail with a hint (shape: see chapter 00)."""


from helpers.checks import NOT_ATTEMPTED, evaluate
from langchain_core.messages import AIMessage

from helpers.travel_graphs import stand_in_reply

SURVIVAL = {"InMemorySaver()": False, "SqliteSaver on a file path": True, "SqliteSaver on ':memory:'": False}

WRONG_ANSWERS = {
    "01.1": [((3,), "only your messages"), ((2,), "one turn or none"), (("6",), "expected an int"),
             ((12,), "a thread id nothing else used")],
    "01.2": [((lambda c: {"thread_id": c},), "inside config['configurable']"),
             ((lambda c: {"configurable": {"thread_id": "chat"}},), "same thread_id"),
             ((lambda c: {"configurable": {"user": c}},), "needs {'configurable'"),
             ((lambda c: None,), "expected a dict")],
    "01.3": [((lambda state: {"messages": [stand_in_reply(state["messages"][-1:])]},), "whole state['messages']"),
             ((lambda state: stand_in_reply(state["messages"]),), "a dict like"),
             ((lambda state: {"messages": [AIMessage("Sure.")]},), "the assistant answered 'Sure.'")],
    "01.4": [(({**SURVIVAL, "SqliteSaver on ':memory:'": True},), "':memory:'"),
             (({**SURVIVAL, "InMemorySaver()": True},), "dict inside the process"),
             (({**SURVIVAL, "SqliteSaver on a file path": "yes"},), "expected a bool"),
             (({"InMemorySaver()": False},), "exactly these keys")],
}
