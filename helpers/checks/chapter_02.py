"""Checks for chapter 02 (checkpoint anatomy).

Each check runs the real experiment (a chat graph on a fresh saver, a SQLite file in a
temporary directory) and compares the learner's answer with what LangGraph actually does.
"""

from __future__ import annotations

import sqlite3
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from ..counting_saver import CountingSaver
from ..travel_graphs import build_chat_graph, say
from .protocol import Fail, call_answer, exercise, expect_type

TURNS = ("I'd like a window seat, please.", "Which seat did I ask for?", "Do you have an aisle seat?")


# ---------------------------------------------------------------------------------------
# 02.1 predict a third turn


@lru_cache(maxsize=1)
def third_turn_truth() -> dict[str, int]:
    """Run three turns on a fresh CountingSaver and measure the third."""
    saver = CountingSaver(InMemorySaver())
    graph = build_chat_graph(saver)
    for text in TURNS[:2]:
        say(graph, "check-02-1", text)
    saver.reset()
    say(graph, "check-02-1", TURNS[2])
    counts = saver.counts()
    config = {"configurable": {"thread_id": "check-02-1"}}
    history = list(graph.get_state_history(config))
    return {"checkpoints": len(history), "newest_step": graph.get_state(config).metadata["step"],
            "put": counts["put"], "put_writes": counts["put_writes"]}


THIRD_TURN_HINTS = {
    "checkpoints": "every turn adds an input checkpoint plus one per super-step (__start__, then reply)",
    "newest_step": "steps keep counting across invokes: turn 2 ended at step 4, so turn 3's input checkpoint is step 5",
    "put": "each checkpoint of the turn is saved with one put, the input checkpoint included",
    "put_writes": "put_writes saves one task's writes; the tasks of a turn are __start__ and reply "
                  "(the input checkpoint is not a task)",
}


@exercise("02.1")
def third_turn(answer: Any) -> str:
    expect_type(answer, dict, 'a dict with the keys "checkpoints", "newest_step", "put", "put_writes"')
    truth = third_turn_truth()
    missing = [k for k in truth if k not in answer]
    if missing:
        raise Fail(f"missing key(s) {missing}; the dict needs {list(truth)}")
    for key in truth:
        expect_type(answer[key], int, f"{key}")
    wrong = [k for k in truth if answer[k] != truth[k]]
    if wrong:
        key = wrong[0]
        extra = ""
        if key == "put" and answer[key] == 3 * truth[key]:
            extra = "; count only the third invoke's calls, not the whole thread's"
        if key == "newest_step" and answer[key] == 1:
            extra = "; the step counter does not restart at -1 for a new invoke"
        raise Fail(f"{len(wrong)} of 4 values are off, starting with {key!r}: {THIRD_TURN_HINTS[key]}{extra}")
    return f"{truth['checkpoints']} checkpoints, newest at step {truth['newest_step']}, put ×3 and put_writes ×2 per turn"


# ---------------------------------------------------------------------------------------
# 02.2 walk the parent chain


class _Runaway(Exception):
    pass


class _GuardedSaver:
    """Delegates to a saver, but stops a walk that never ends."""

    def __init__(self, inner: Any, limit: int = 200) -> None:
        self._inner, self._limit, self._calls = inner, limit, 0

    def get_tuple(self, config: Any) -> Any:
        self._calls += 1
        if self._calls > self._limit:
            raise _Runaway()
        return self._inner.get_tuple(config)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _walk_cases() -> list[tuple[str, Any, dict, list[int]]]:
    """(description, saver, config, expected steps newest first)."""
    saver = InMemorySaver()
    graph = build_chat_graph(saver)
    for text in TURNS[:2]:
        say(graph, "linear", text)
        say(graph, "forked", text)
    forked = {"configurable": {"thread_id": "forked"}}
    before_reply = next(s for s in graph.get_state_history(forked) if s.metadata["step"] == 3)
    graph.invoke(None, before_reply.config)  # replay from step 3: a fork, the old C5 is left aside
    return [
        ("a two-turn thread", saver, {"configurable": {"thread_id": "linear"}}, [4, 3, 2, 1, 0, -1]),
        ("an empty thread", saver, {"configurable": {"thread_id": "nobody"}}, []),
        ("a thread with a fork", saver, forked, [5, 4, 3, 2, 1, 0, -1]),
    ]


@exercise("02.2")
def walk_parents(walk_to_root: Any) -> str:
    for description, saver, config, expected in _walk_cases():
        try:
            result = call_answer(walk_to_root, _GuardedSaver(saver), config, what="walk_to_root(saver, config)")
        except _Runaway:
            raise Fail(f"on {description} your walk never stopped; follow current.parent_config and stop when it is None")
        if isinstance(result, tuple):
            result = list(result)
        expect_type(result, list, "the steps, newest first")
        if result == expected:
            continue
        if not expected:
            raise Fail(f"on {description} you returned {result!r}; get_tuple returns None there, so return []")
        if any(isinstance(x, bool) or not isinstance(x, int) for x in result):
            raise Fail(f"on {description} the list holds {type(result[0]).__name__} values; return metadata['step'] (ints)")
        if result == expected[::-1]:
            raise Fail(f"on {description} the order is reversed: start at the newest checkpoint and walk to the root")
        if len(result) > len(expected) and set(result) == set(expected):
            raise Fail(f"on {description} you returned {len(result)} steps, the chain has {len(expected)}: you listed "
                       "every checkpoint of the thread; follow parent_config instead (a fork leaves a sibling off the chain)")
        if result == expected[:-1]:
            raise Fail(f"on {description} the root checkpoint (step -1) is missing: include the one without a parent")
        raise Fail(f"on {description} expected {expected}, got {result!r}")
    return "the chain goes newest → root by parent_config, and skips the checkpoint a fork left aside"


# ---------------------------------------------------------------------------------------
# 02.3 count checkpoints in a SQLite file


class _Trip(TypedDict, total=False):
    seat: str
    fare: int


def _fan_out_graph(saver: Any) -> Any:
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
def count_per_thread(checkpoints_per_thread: Any) -> str:
    with tempfile.TemporaryDirectory() as folder:
        path, expected, writes = build_sample_db(Path(folder))
        try:
            result = call_answer(checkpoints_per_thread, str(path), what="checkpoints_per_thread(db_path)")
        except sqlite3.OperationalError as exc:
            message = str(exc)
            if "no such table" in message:
                raise Fail(f"sqlite3 says {message!r}: SqliteSaver's tables are named checkpoints and writes "
                           "(the docs' checkpoint_writes is not used); list them from sqlite_master")
            raise Fail(f"sqlite3 raised OperationalError: {message}; try your query on the file in the chapter first")
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
