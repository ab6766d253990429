"""Checks for chapter 01 (threads).

Each check runs the learner's code on fresh graphs and savers, so no number copied from an
output can pass it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel

from ..travel_graphs import reply
from .protocol import Fail, call_answer, exercise, expect_type

WINDOW = "I'd like a window seat, please."
AISLE = "An aisle seat, please."
WHERE = "Where did I say I want to sit?"
DONT_KNOW = "I don't know"


def _answer(graph: Pregel, config: dict[str, Any], text: str) -> str:
    result = graph.invoke({"messages": [HumanMessage(text)]}, config)
    return str(result["messages"][-1].content)


def _message_count(graph: Pregel, config: dict[str, Any]) -> int:
    return len(graph.get_state(config).values.get("messages", []))


# ---------------------------------------------------------------------------------------
# 01.1 a persistent assistant: the given node, compiled with the given checkpointer, one thread per conversation

PROBE_ANSWER = "The other kind of customer's model answered."


def _probe_node(state: MessagesState) -> dict[str, list[AIMessage]]:
    """The check's own node: the other kind of customer's model, which always gives the same answer."""
    return {"messages": [AIMessage(PROBE_ANSWER)]}


def _configs(config_for: Callable[[str], Any]) -> tuple[dict[str, Any], dict[str, Any]]:
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
    if call_answer(config_for, "conv-a", what="config_for(conversation_id)") != configs[0]:
        raise Fail("config_for('conv-a') returned different configs on two calls; the same conversation "
                   "must always map to the same thread")
    return configs[0], configs[1]


def _built(build_assistant: Callable[[Any, Any], Any], saver: BaseCheckpointSaver,
           node: Callable[[Any], Any]) -> Pregel:
    graph = call_answer(build_assistant, saver, node, what="build_assistant(checkpointer, node)")
    if isinstance(graph, StateGraph):
        raise Fail("build_assistant returned the builder; return builder.compile(checkpointer=checkpointer)")
    if not isinstance(graph, Pregel):
        raise Fail(f"build_assistant returned {type(graph).__name__}; return the compiled graph")
    if graph.checkpointer is None:
        raise Fail("the graph has no checkpointer, so every invoke starts empty; "
                   "compile it with compile(checkpointer=checkpointer)")
    if graph.checkpointer is not saver:
        raise Fail("the graph uses a checkpointer of its own, not the one build_assistant was given; "
                   "pass the argument on: compile(checkpointer=checkpointer)")
    return graph


def _turns(turns_so_far: Callable[[Any, str], Any], graph: Pregel, config_for: Callable[[str], Any],
           conversation: str) -> Any:
    """turns_so_far(graph, conversation), failing with a hint if it raises or runs the graph."""
    config = call_answer(config_for, conversation, what="config_for(conversation_id)")
    before = _message_count(graph, config)
    try:
        got = call_answer(turns_so_far, graph, conversation, what="turns_so_far(graph, conversation_id)")
    except KeyError as exc:
        raise Fail(f"turns_so_far raised KeyError {exc} for conversation {conversation!r}: a conversation that never "
                   "started has an empty state (values is {}); read values.get('messages', [])") from None
    except Exception as exc:
        raise Fail(f"turns_so_far raised {type(exc).__name__} for conversation {conversation!r}: {exc}") from None
    if _message_count(graph, config) != before:
        raise Fail("turns_so_far changed the conversation: it ran the graph. Read what the saver holds with "
                   "graph.get_state(config) instead of invoking")
    if isinstance(got, bool) or not isinstance(got, int):
        raise Fail(f"turns_so_far returned {type(got).__name__}; return an int, the number of user messages")
    return got


@exercise("01.1")
def check_persistent_assistant(build_assistant: Callable[[Any, Any], Any], config_for: Callable[[str], Any],
                               turns_so_far: Callable[[Any, str], Any]) -> str:
    saver = InMemorySaver()
    probe = _built(build_assistant, saver, _probe_node)
    got = _answer(probe, {"configurable": {"thread_id": "check-probe"}}, WHERE)
    if got != PROBE_ANSWER:
        raise Fail(f"built with the check's own node, the graph answered {got!r}, so it did not run the node it was "
                   "given; add the node argument: builder.add_node('assistant', node)")
    graph = _built(build_assistant, saver, reply)
    first, second = _configs(config_for)
    _answer(graph, first, WINDOW)
    answer = _answer(graph, first, WHERE)
    if "window" not in answer:
        raise Fail(f"on conversation a, built with the chapter's reply node, the second answer was {answer!r}; "
                   "the graph must run the node it is given, and nothing else")
    _answer(graph, second, AISLE)
    if _message_count(graph, second) != 2:
        raise Fail(f"conversation b holds {_message_count(graph, second)} messages after one turn instead of 2: "
                   "the two conversations share a history")
    reopened = _built(build_assistant, saver, _probe_node)
    if _message_count(reopened, first) != 4:
        raise Fail("a second graph built on the same saver does not see conversation a's 4 messages")
    for turns_graph, conversation, expected, saved in ((reopened, "conv-a", 2, 4), (graph, "conv-b", 1, 2),
                                                       (reopened, "conv-never-started", 0, 0)):
        got = _turns(turns_so_far, turns_graph, config_for, conversation)
        if got == expected:
            continue
        if saved and got == saved:
            raise Fail(f"turns_so_far({conversation!r}) gave {got}, the number of all saved messages; the assistant's "
                       "answers are saved too: count only the user's (message.type == 'human')")
        if got == 0:
            raise Fail(f"turns_so_far({conversation!r}) gave 0 although the conversation has {expected} user "
                       "message(s); read the state through config_for(conversation_id), on the graph you are given")
        raise Fail(f"turns_so_far({conversation!r}) gave {got}; the conversation holds {expected} user message(s)")
    return "two conversations kept apart, and a second graph reads their turns back from the saver"


# ---------------------------------------------------------------------------------------
# 01.2 a model with a three-message window


def _graph_around(node: Callable[[Any], Any]) -> CompiledStateGraph:
    builder = StateGraph(MessagesState)
    builder.add_node("reply", node)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=InMemorySaver())


@exercise("01.2")
def check_recent_reply_node(node: Callable[[Any], Any]) -> str:
    probe = call_answer(node, {"messages": [HumanMessage("Hello")]}, what="reply_recent(state)")
    if not isinstance(probe, dict) or "messages" not in probe:
        raise Fail("a node returns a state update: a dict like {'messages': [new_message]}")
    graph = _graph_around(node)
    near = {"configurable": {"thread_id": "near"}}
    _answer(graph, near, WINDOW)
    answer = _answer(graph, near, WHERE)
    if "window" not in answer:
        raise Fail(f"with the seat two messages back, the assistant answered {answer!r}; hand the model the newest "
                   "three messages, state['messages'][-3:]")
    far = {"configurable": {"thread_id": "far"}}
    for text in (WINDOW, "Is there wifi on board?"):
        _answer(graph, far, text)
    answer = _answer(graph, far, WHERE)
    if answer.startswith("Noted"):
        raise Fail(f"with five messages saved, the assistant answered {answer!r} to the user's question: the last "
                   "message the model was handed was not the newest one. state['messages'][:3] is the oldest three "
                   "messages; the newest three are state['messages'][-3:]")
    if DONT_KNOW not in answer:
        raise Fail(f"with the seat four messages back, the assistant still answered {answer!r}: the model was "
                   "handed more than the newest three messages")
    saved = _message_count(graph, far)
    if saved != 6:
        raise Fail(f"after three turns the thread holds {saved} messages instead of 6: the node must not remove "
                   "saved messages; only choose what to hand the model, and return just the new reply")
    return "the model sees the newest three messages, while the thread keeps all of them"


# ---------------------------------------------------------------------------------------
# 01.3 what survives the end of the process?

SURVIVAL = {
    "InMemorySaver, new graph, same process": True,
    "InMemorySaver, kernel restarted": False,
    "SQLite file, kernel restarted": True,
    "SQLite ':memory:', kernel restarted": False,
    "SQLite ':memory:', new graph, same saver": True,
}
SURVIVAL_HINTS = {
    "InMemorySaver, new graph, same process":
        "state belongs to (the saver's storage, thread_id), not to the graph object: a new graph on the same "
        "InMemorySaver object sees it",
    "InMemorySaver, kernel restarted":
        "InMemorySaver keeps checkpoints in a dict inside the process; a restarted kernel is a new process",
    "SQLite file, kernel restarted":
        "a SQLite file outlives the process that wrote it, as the notebook showed after process A exited",
    "SQLite ':memory:', kernel restarted":
        "':memory:' is a SQLite database inside the process's memory: it dies with the process",
    "SQLite ':memory:', new graph, same saver":
        "while the process lives, the ':memory:' database lives too, and the same saver object shares it",
}


@exercise("01.3")
def check_survival_predictions(answer: Any) -> str:
    expect_type(answer, dict, "situation -> True/False")
    if set(answer) != set(SURVIVAL):
        missing = sorted(set(SURVIVAL) - set(answer))
        raise Fail(f"use exactly the five keys of the prompt; missing {missing}" if missing
                   else f"use exactly the five keys of the prompt; unexpected {sorted(set(answer) - set(SURVIVAL))}")
    for key, value in answer.items():
        expect_type(value, bool, f"whether the thread is found: {key}")
    wrong = [key for key in SURVIVAL if answer[key] != SURVIVAL[key]]
    if wrong:
        verb = "is" if len(wrong) == 1 else "are"
        raise Fail(f"{len(wrong)} of {len(SURVIVAL)} {verb} off; {wrong[0]!r}: {SURVIVAL_HINTS[wrong[0]]}")
    return ("only a file outlives the process; within one process, what counts is the saver's storage: the same "
            "InMemorySaver object or ':memory:' database keeps the thread for every graph on it")
