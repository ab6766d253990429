"""Checks for chapter 01 (threads)."""

from __future__ import annotations

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from .protocol import Fail, call_answer, exercise, expect_type


@exercise("01.1")
def three_turns(answer):
    expect_type(answer, int, "the number of messages in thread ex-1")
    if answer == 3:
        raise Fail("3 counts only your messages: every turn also saves the assistant's reply")
    if answer in (0, 1, 2):
        raise Fail("that looks like one turn or none; did you send three messages on thread 'ex-1' "
                   "and read get_state with the same thread_id?")
    if answer == 6:
        return "3 turns x (your message + the reply) = 6"
    raise Fail(f"{answer} is not what three turns on a fresh thread save; run the exercise cell once, "
               "on a thread id nothing else used")


def _configs(config_for):
    configs = []
    for conversation in ("conv-a", "conv-b"):
        config = call_answer(config_for, conversation, what="config_for(conversation_id)")
        expect_type(config, dict, "an invoke config")
        if "thread_id" in config and "configurable" not in config:
            raise Fail("thread_id goes inside config['configurable'], not at the top level")
        inner = config.get("configurable")
        if not isinstance(inner, dict) or "thread_id" not in inner:
            raise Fail("the config needs {'configurable': {'thread_id': ...}}")
        configs.append(config)
    if configs[0]["configurable"]["thread_id"] == configs[1]["configurable"]["thread_id"]:
        raise Fail("two conversations got the same thread_id, so they would share one history; "
                   "derive the thread_id from conversation_id")
    return configs


@exercise("01.2")
def config_per_conversation(config_for):
    from ..travel_graphs import build_chat_graph

    first, second = _configs(config_for)
    again = call_answer(config_for, "conv-a", what="config_for(conversation_id)")
    if again != first:
        raise Fail("config_for('conv-a') returned different configs on two calls; the same conversation "
                   "must always map to the same thread")
    graph = build_chat_graph(InMemorySaver())
    graph.invoke({"messages": [HumanMessage("A window seat, please.")]}, first)
    graph.invoke({"messages": [HumanMessage("Where did I say I want to sit?")]}, second)
    seen = len(graph.get_state(second).values["messages"])
    if seen != 2:
        raise Fail(f"conversation b saw {seen} messages instead of 2: the histories are not separate")
    return "each conversation gets its own thread"


@exercise("01.3")
def remembering(node):
    from ..travel_graphs import say

    if node is Ellipsis:
        return call_answer(node)
    builder = StateGraph(MessagesState)
    builder.add_node("reply", node)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    probe = call_answer(node, {"messages": [HumanMessage("Hello")]}, what="remembering_reply(state)")
    if not isinstance(probe, dict) or "messages" not in probe:
        raise Fail("a node returns a state update: a dict like {'messages': [new_message]}")
    say(graph, "check", "I'd like an aisle seat.")
    answer = say(graph, "check", "Where did I say I want to sit?")
    if "aisle" not in answer:
        raise Fail(f"the assistant answered {answer!r}; pass the whole state['messages'] list to "
                   "stand_in_reply, not only the last message")
    if len(graph.get_state({"configurable": {"thread_id": "check"}}).values["messages"]) != 4:
        raise Fail("after two turns the thread should hold 4 messages; return only the new reply, "
                   "the reducer appends it")
    return "the node hands the model the whole conversation"


EXPECTED_SURVIVAL = {"InMemorySaver()": False, "SqliteSaver on a file path": True, "SqliteSaver on ':memory:'": False}


@exercise("01.4")
def survival(answer):
    expect_type(answer, dict, "checkpointer -> True/False")
    if set(answer) != set(EXPECTED_SURVIVAL):
        raise Fail(f"use exactly these keys: {sorted(EXPECTED_SURVIVAL)}")
    for key, value in answer.items():
        expect_type(value, bool, f"whether {key} survives")
    if answer["SqliteSaver on ':memory:'"]:
        raise Fail("':memory:' is a SQLite database that lives in the process's memory: it dies with the process")
    if answer["InMemorySaver()"]:
        raise Fail("InMemorySaver keeps checkpoints in a dict inside the process; look at process B's answer above")
    if not answer["SqliteSaver on a file path"]:
        raise Fail("a SQLite file outlives the process that wrote it; look at the sqlite row of the two-process demo")
    return "only a file (or a server) outlives the process"
