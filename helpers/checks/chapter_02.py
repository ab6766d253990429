"""Checks for chapter 02 (checkpoint anatomy).

Each check runs the real experiment (a chat graph on a fresh saver, a SQLite file in a
temporary directory) and compares the learner's answer, or the result of the learner's
function on fresh threads, with what LangGraph actually does.
"""

from __future__ import annotations

import sqlite3
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from ..travel_graphs import build_chat_graph, say
from .protocol import Fail, call_answer, exercise, expect_keys, expect_type

TURNS = ("I'd like a window seat, please.", "Which seat did I ask for?", "Do you have an aisle seat?")


# ---------------------------------------------------------------------------------------
# 02.1 predict a third turn


@lru_cache(maxsize=1)
def third_turn_truth() -> dict[str, int]:
    """Run three turns on a fresh InMemorySaver and measure the thread and the saver."""
    saver = InMemorySaver()
    graph = build_chat_graph(saver)
    for text in TURNS:
        say(graph, "check-02-1", text)
    config = {"configurable": {"thread_id": "check-02-1"}}
    return {"checkpoints": len(list(graph.get_state_history(config))),
            "newest_step": graph.get_state(config).metadata["step"], "blobs": len(saver.blobs)}


THIRD_TURN_HINTS = {
    "checkpoints": "every turn adds an input checkpoint plus one per step (__start__, then reply)",
    "newest_step": "steps keep counting across invokes: turn 2 ended at step 4, so turn 3's input checkpoint is step 5",
    "blobs": "a checkpoint stores a blob only for the channels whose version moved: per turn __start__ twice "
             "(the input, then consumed), branch:to:reply twice and messages twice",
}


@exercise("02.1")
def check_third_turn_prediction(answer: Any) -> str:
    expect_type(answer, dict, 'a dict with the keys "checkpoints", "newest_step", "blobs"')
    truth = third_turn_truth()
    expect_keys(answer, truth)
    for key in truth:
        expect_type(answer[key], int, f"{key}")
    wrong = [k for k in truth if answer[k] != truth[k]]
    if wrong:
        key = wrong[0]
        extra = ""
        if key == "newest_step" and answer[key] == 1:
            extra = "; the step counter does not restart at -1 for a new invoke"
        if key == "blobs" and answer[key] == truth["checkpoints"]:
            extra = "; one blob per checkpoint is how SqliteSaver stores, not InMemorySaver"
        if key == "blobs" and answer[key] == 3 * truth["checkpoints"]:
            extra = "; a checkpoint reuses the blobs of the channels it did not change"
        verb = "is" if len(wrong) == 1 else "are"
        raise Fail(f"{len(wrong)} of {len(truth)} {verb} off, starting with {key!r}: {THIRD_TURN_HINTS[key]}{extra}")
    return (f"{truth['checkpoints']} checkpoints, newest at step {truth['newest_step']}, "
            f"{truth['blobs']} blobs: 6 new ones per turn")


# ---------------------------------------------------------------------------------------
# 02.2 list from a point


def _before_cases() -> list[tuple[str, CompiledStateGraph, dict[str, Any], int, list[int]]]:
    """(description, graph, checkpoint config, limit, expected steps newest first); two threads, one saver."""
    graph = build_chat_graph(InMemorySaver())
    for text in TURNS[:2]:
        say(graph, "two-turns", text)
    for text in TURNS:
        say(graph, "three-turns", text)

    def at_step(thread_id: str, step: int) -> dict[str, Any]:
        history = graph.get_state_history({"configurable": {"thread_id": thread_id}})
        return next(s.config for s in history if s.metadata["step"] == step)

    return [
        ("the step-3 checkpoint of a two-turn thread, limit 2", graph, at_step("two-turns", 3), 2, [2, 1]),
        ("the step-3 checkpoint of a two-turn thread, limit 10", graph, at_step("two-turns", 3), 10, [2, 1, 0, -1]),
        ("the first checkpoint of a thread, limit 3", graph, at_step("two-turns", -1), 3, []),
        ("the step-6 checkpoint of a three-turn thread, limit 3", graph, at_step("three-turns", 6), 3, [5, 4, 3]),
    ]


@exercise("02.2")
def check_steps_before(steps_before: Any) -> str:
    for description, graph, checkpoint_config, limit, expected in _before_cases():
        result = call_answer(steps_before, graph, checkpoint_config, limit,
                             what="steps_before(graph, checkpoint_config, limit)", case=description)
        if isinstance(result, tuple):
            result = list(result)
        expect_type(result, list, "the steps, newest first")
        if result == expected:
            continue
        if any(isinstance(x, bool) or not isinstance(x, int) for x in result):
            raise Fail(f"on {description} the list holds {type(result[0]).__name__} values; "
                       "return each snapshot's metadata['step'] (ints)")
        own_step = graph.get_state(checkpoint_config).metadata["step"]
        if result == [own_step]:
            raise Fail(f"on {description} you returned only the checkpoint itself: a checkpoint_id in the config is an "
                       "exact-match filter; pass the thread alone as config and the checkpoint as before=")
        if not result:
            raise Fail(f"on {description} you returned []: a checkpoint_id in the config is an exact-match filter; "
                       "pass the thread alone as config and the checkpoint as before=")
        if result == expected[::-1]:
            raise Fail(f"on {description} the order is reversed: get_state_history lists newest first")
        if len(result) > len(expected) and result[:len(expected)] == expected:
            raise Fail(f"on {description} you returned {len(result)} steps, not at most {limit}: pass limit= too")
        if expected and result[1:len(expected) + 1] == expected[:len(result) - 1] and result[0] > expected[0]:
            raise Fail(f"on {description} your list starts with the checkpoint itself; before= lists only the "
                       "checkpoints that come before it")
        raise Fail(f"on {description} expected {expected}, got {result!r}")
    return "before= starts below a checkpoint, limit= caps the list, and a checkpoint_id alone is an exact match"


# ---------------------------------------------------------------------------------------
# 02.3 count checkpoints in a SQLite file


class _Trip(TypedDict, total=False):
    seat: str
    fare: int


def _fan_out_graph(saver: BaseCheckpointSaver) -> CompiledStateGraph:
    builder = StateGraph(_Trip)
    builder.add_node("lookup_seat", lambda state: {"seat": "12A"})
    builder.add_node("lookup_fare", lambda state: {"fare": 180})
    builder.add_edge(START, "lookup_seat")
    builder.add_edge(START, "lookup_fare")
    builder.add_edge("lookup_seat", END)
    builder.add_edge("lookup_fare", END)
    return builder.compile(checkpointer=saver)


def build_sample_db(folder: Path) -> tuple[Path, dict[str, int], dict[str, int]]:
    """A SqliteSaver file with three threads; returns (path, checkpoints, writes) per thread."""
    path = folder / "sample.db"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        chat = build_chat_graph(saver)
        for text in TURNS[:2]:
            say(chat, "trip-a", text)
        say(chat, "trip-b", TURNS[0])
        _fan_out_graph(saver).invoke({}, {"configurable": {"thread_id": "fan-out"}})
    with sqlite3.connect(path) as con:
        checkpoints = dict(con.execute("SELECT thread_id, COUNT(*) FROM checkpoints GROUP BY thread_id").fetchall())
        writes = dict(con.execute("SELECT thread_id, COUNT(*) FROM writes GROUP BY thread_id").fetchall())
    con.close()
    return path, checkpoints, writes


@exercise("02.3")
def check_checkpoints_per_thread(checkpoints_per_thread: Any) -> str:
    with tempfile.TemporaryDirectory(prefix="course-02-check-") as folder:
        path, expected, writes = build_sample_db(Path(folder))
        try:
            result = call_answer(checkpoints_per_thread, str(path), what="checkpoints_per_thread(db_path)")
        except sqlite3.OperationalError as exc:
            message = str(exc)
            if "no such table" in message:
                raise Fail(f"sqlite3 says {message!r}: each saver names its own tables, and SqliteSaver's are "
                           "checkpoints and writes (checkpoint_writes is PostgresSaver's); "
                           "list them from sqlite_master") from None
            raise Fail(f"sqlite3 raised OperationalError: {message}; "
                       "try your query on the file in the chapter first") from None
    expect_type(result, dict, "thread_id -> number of checkpoints; dict(rows) turns (thread_id, count) rows into one")
    if result == expected:
        return f"{len(expected)} threads counted: " + ", ".join(f"{t}={n}" for t, n in sorted(expected.items()))
    if result == writes:
        raise Fail("these are the row counts of the writes table; count rows of the checkpoints table instead")
    missing = sorted(set(expected) - set(result))
    if missing:
        raise Fail(f"thread(s) {missing} are missing; group by thread_id over the whole checkpoints table")
    extra = sorted(set(result) - set(expected), key=str)
    if extra:
        raise Fail(f"unexpected key(s) {extra}; the keys are the thread_id values")
    wrong = sorted(t for t in expected if result[t] != expected[t])
    raise Fail(f"the count for {wrong[0]!r} is {result[wrong[0]]!r}; count every row of that thread in checkpoints "
               "(COUNT(*) ... GROUP BY thread_id)")
