"""Wrong answers for chapter 01's exercises must fail with a hint (shape: see chapter 00)."""

from langchain_core.messages import AIMessage, RemoveMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from helpers.checks import PASSED, evaluate
from helpers.travel_graphs import build_chat_graph, reply, reply_to_last_only, stand_in_reply


def builder_with(node):
    builder = StateGraph(MessagesState)
    builder.add_node("reply", node)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder


def right_build(checkpointer):
    return builder_with(reply).compile(checkpointer=checkpointer)


def right_config(conversation_id):
    return {"configurable": {"thread_id": conversation_id}}


# -- 01.1: realistic mistakes ---------------------------------------------------------------
def build_without_checkpointer(checkpointer):
    return builder_with(reply).compile()


def build_with_own_saver(checkpointer):
    return builder_with(reply).compile(checkpointer=InMemorySaver())


def build_not_compiled(checkpointer):
    return builder_with(reply)


def build_short_sighted(checkpointer):
    return builder_with(reply_to_last_only).compile(checkpointer=checkpointer)


# -- 01.2: learner nodes -------------------------------------------------------------------
def recent_two(state):
    return {"messages": [stand_in_reply(state["messages"][-2:])]}


def recent_all(state):
    return {"messages": [stand_in_reply(state["messages"])]}


def recent_by_trimming(state):
    """Trims the saved conversation instead of choosing what to hand the model."""
    stale = [RemoveMessage(id=m.id) for m in state["messages"][:-3]]
    return {"messages": stale + [stand_in_reply(state["messages"][-3:])]}


SURVIVAL = {
    "InMemorySaver, new graph, same process": True,
    "InMemorySaver, kernel restarted": False,
    "SQLite file, kernel restarted": True,
    "SQLite ':memory:', kernel restarted": False,
    "SQLite ':memory:', new graph, same saver": True,
}

WRONG_ANSWERS = {
    "01.1": [((build_without_checkpointer, right_config), "compile(checkpointer=checkpointer)"),
             ((build_with_own_saver, right_config), "a checkpointer of its own"),
             ((build_not_compiled, right_config), "returned the builder"),
             ((build_short_sighted, right_config), "whole state['messages']"),
             ((right_build, lambda c: {"thread_id": c}), "inside config['configurable']"),
             ((right_build, lambda c: {"configurable": {"thread_id": "chat"}}), "same thread_id"),
             ((right_build, lambda c: {"configurable": {"user": c}}), "needs {'configurable'"),
             ((right_build, lambda c: None), "expected a dict")],
    "01.2": [((recent_two,),  "state['messages'][-3:]"),
             ((recent_all,), "more than the newest three"),
             ((recent_by_trimming,), "must not remove saved messages"),
             ((lambda state: stand_in_reply(state["messages"][-3:]),), "a dict like"),
             ((lambda state: {"messages": [AIMessage("Sure.")]},), "answered 'Sure.'")],
    "01.3": [(({**SURVIVAL, "SQLite ':memory:', kernel restarted": True},), "1 of 5 is off"),
             (({**SURVIVAL, "InMemorySaver, new graph, same process": False, "InMemorySaver, kernel restarted": True},),
              "2 of 5 are off; 'InMemorySaver, new graph, same process': state belongs to"),
             (({**SURVIVAL, "SQLite file, kernel restarted": "yes"},), "expected a bool"),
             (({"InMemorySaver, kernel restarted": False},), "missing"),
             (({**SURVIVAL, "Postgres": True},), "unexpected")],
}


def test_right_answers_pass():
    assert evaluate("01.1", right_build, right_config).status == PASSED
    assert evaluate("01.1", lambda saver: build_chat_graph(saver), right_config).status == PASSED
    assert evaluate("01.2", lambda state: {"messages": [stand_in_reply(state["messages"][-3:])]}).status == PASSED
    assert evaluate("01.3", dict(SURVIVAL)).status == PASSED
