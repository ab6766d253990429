"""Checks for chapter 02 (checkpoint anatomy).

Each check runs the real experiment (a chat graph on a fresh saver, a SQLite file in a
temporary directory) and compares the learner's answer, or the result of the learner's
function on fresh threads, with what LangGraph actually does.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from contextlib import closing
from functools import lru_cache
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph

from ..travel_graphs import build_chat_graph, reply, say
from .protocol import Fail, call_answer, exercise, expect_keys, expect_type

TURNS = ("I'd like a window seat, please.", "Which seat did I ask for?", "Do you have an aisle seat?")


# ---------------------------------------------------------------------------------------
# 02.1 predict a graph the chapter never ran: START -> check_in -> reply -> log_turn -> END


def _check_in(state: MessagesState) -> dict[str, Any]:
    """Looks at the state and changes nothing."""
    return {}


def _log_turn(state: MessagesState) -> dict[str, Any]:
    """Looks at the state and changes nothing."""
    return {}


def check_in_graph(saver: BaseCheckpointSaver) -> CompiledStateGraph:
    """START -> check_in -> reply -> log_turn -> END on MessagesState; check_in and log_turn return {}."""
    builder = StateGraph(MessagesState)
    builder.add_node("check_in", _check_in)
    builder.add_node("reply", reply)
    builder.add_node("log_turn", _log_turn)
    builder.add_edge(START, "check_in")
    builder.add_edge("check_in", "reply")
    builder.add_edge("reply", "log_turn")
    builder.add_edge("log_turn", END)
    return builder.compile(checkpointer=saver)


@lru_cache(maxsize=1)
def two_turns_truth() -> dict[str, int]:
    """Run two turns of the check_in graph on a fresh InMemorySaver and measure the thread."""
    graph = check_in_graph(InMemorySaver())
    for text in TURNS[:2]:
        say(graph, "check-02-1", text)
    config = {"configurable": {"thread_id": "check-02-1"}}
    history = list(graph.get_state_history(config))
    return {"checkpoints": len(history), "newest_step": graph.get_state(config).metadata["step"],
            "reply_pending": sum(1 for s in history if s.next == ("reply",))}


TWO_TURNS_HINTS = {
    "checkpoints": "a turn is saved when its input arrives and after each step; this graph runs two more nodes per "
                   "turn than the chapter's (__start__, check_in, reply, log_turn), and the thread keeps both turns",
    "newest_step": "steps keep counting across invokes: count turn 1's steps from -1, and turn 2's input "
                   "checkpoint takes the next number",
    "reply_pending": "next names what runs in the following step: reply is pending in the checkpoint saved right "
                     "after check_in ran, once per turn",
}


# What a count the learner got from another graph (or another run) means.
WRONG_VALUE_HINTS = {
    ("checkpoints", 6): "; 6 is the one-node graph's count, 3 per turn",
    ("checkpoints", 8): "; 8 is a two-node graph's count, 4 per turn",
    ("checkpoints", 5): "; 5 counts one turn only",
    ("newest_step", 3): "; the step counter does not restart at -1 for a new invoke",
    ("newest_step", 4): "; 4 is the one-node graph's newest step",
    ("newest_step", 6): "; 6 is a two-node graph's newest step",
    ("reply_pending", 0): "; a checkpoint whose next step runs reply has ('reply',) in next",
}


@exercise("02.1")
def check_two_turns_prediction(answer: Any) -> str:
    expect_type(answer, dict, 'a dict with the keys "checkpoints", "newest_step", "reply_pending"')
    truth = two_turns_truth()
    expect_keys(answer, truth)
    for key in truth:
        expect_type(answer[key], int, f"{key}")
    wrong = [k for k in truth if answer[k] != truth[k]]
    if wrong:
        key = wrong[0]
        extra = WRONG_VALUE_HINTS.get((key, answer[key]), "")
        verb = "is" if len(wrong) == 1 else "are"
        raise Fail(f"{len(wrong)} of {len(truth)} {verb} off, starting with {key!r}: {TWO_TURNS_HINTS[key]}{extra}")
    return (f"{truth['checkpoints']} checkpoints, newest at step {truth['newest_step']}, reply pending in "
            f"{truth['reply_pending']}: one checkpoint for the input and one per step, in every turn")


# ---------------------------------------------------------------------------------------
# 02.2 page through a history, one get_state_history call per page


class _Runaway(BaseException):
    """Raised inside the learner's loop when it calls get_state_history far too often."""


class _PageCountingGraph:
    """A graph stand-in that records each get_state_history call's limit and stops a runaway loop."""

    def __init__(self, graph: CompiledStateGraph, max_calls: int) -> None:
        self._graph = graph
        self._max_calls = max_calls
        self.limits: list[Any] = []

    def get_state_history(self, config: Any, *args: Any, **kwargs: Any) -> Any:
        self.limits.append(kwargs.get("limit", args[2] if len(args) > 2 else None))
        if len(self.limits) > self._max_calls:
            raise _Runaway
        return self._graph.get_state_history(config, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._graph, name)


def _paged(steps: list[int], size: int) -> list[list[int]]:
    return [steps[i:i + size] for i in range(0, len(steps), size)]


def _page_cases() -> list[tuple[str, CompiledStateGraph, str, int, list[list[int]]]]:
    """(description, graph, thread_id, size, expected pages); threads of two and three turns on one saver."""
    graph = build_chat_graph(InMemorySaver())
    for text in TURNS[:2]:
        say(graph, "two-turns", text)
    for text in TURNS:
        say(graph, "three-turns", text)
    two, three = [4, 3, 2, 1, 0, -1], [7, 6, 5, 4, 3, 2, 1, 0, -1]
    return [
        ("a two-turn thread, pages of 4", graph, "two-turns", 4, _paged(two, 4)),
        ("a two-turn thread, pages of 2", graph, "two-turns", 2, _paged(two, 2)),
        ("a three-turn thread, pages of 4", graph, "three-turns", 4, _paged(three, 4)),
        ("a three-turn thread, pages of 10", graph, "three-turns", 10, _paged(three, 10)),
        ("a thread that never started, pages of 3", graph, "never-started", 3, []),
    ]


def _page_hint(description: str, result: list[Any], expected: list[list[int]], size: int) -> str:
    flat = [step for page in result for step in page]
    wanted = [step for page in expected for step in page]
    if any(len(page) > size for page in result):
        return f"on {description} a page holds more than {size} steps: pass limit=size"
    if len(flat) > len(set(flat)):
        return (f"on {description} the pages overlap ({result}): before= takes the config of the last (oldest) "
                "snapshot of the previous page, not its first")
    if flat == wanted[::-1] or [page[::-1] for page in result] == expected:
        return f"on {description} the order is reversed: get_state_history lists newest first"
    if result and not flat:
        return f"on {description} you returned empty pages {result}; leave out a page that comes back empty"
    if set(flat) < set(wanted):
        missing = sorted(set(wanted) - set(flat))
        return (f"on {description} the steps {missing} are missing: keep fetching, with before= the last snapshot "
                "of the page you got, until a page comes back empty")
    return f"on {description} expected {expected}, got {result!r}"


@exercise("02.2")
def check_history_pages(history_pages: Any) -> str:
    for description, graph, thread_id, size, expected in _page_cases():
        counting = _PageCountingGraph(graph, max_calls=len(expected) + 10)
        try:
            result = call_answer(history_pages, counting, thread_id, size,
                                 what="history_pages(graph, thread_id, size)", case=description)
        except _Runaway:
            raise Fail(f"on {description} your loop called get_state_history more than {len(expected) + 10} times "
                       "without ending: stop when a page comes back empty, and pass the thread alone as config (a "
                       "checkpoint_id in it is an exact-match filter, so before= is how you move on)") from None
        if isinstance(result, tuple):
            result = list(result)
        expect_type(result, list, "a list of pages, each a list of steps")
        if result and all(isinstance(x, int) and not isinstance(x, bool) for x in result):
            raise Fail(f"on {description} you returned one flat list of steps; return a list of pages, "
                       "each page a list of at most size steps")
        for page in result:
            expect_type(page, list, "each page as a list of steps")
            if any(isinstance(x, bool) or not isinstance(x, int) for x in page):
                raise Fail(f"on {description} a page holds {type(page[0]).__name__} values; "
                           "return each snapshot's metadata['step'] (ints)")
        if result != expected:
            raise Fail(_page_hint(description, result, expected, size))
        if expected and any(limit != size for limit in counting.limits):
            raise Fail(f"on {description} the pages are right, but a get_state_history call had limit="
                       f"{counting.limits[0]!r}: fetch each page with limit=size, as a UI that never loads the whole "
                       "history must")
        if len(counting.limits) < len(expected):
            raise Fail(f"on {description} you made {len(counting.limits)} get_state_history call(s) for "
                       f"{len(expected)} pages: fetch each page with its own call (before=, limit=)")
    return "one call per page: limit= caps a page, before= the last snapshot of the page fetches the next"


# ---------------------------------------------------------------------------------------
# 02.3 count turns in a SQLite file (checkpoints whose metadata source is "input")


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


def _nested_graph(saver: BaseCheckpointSaver) -> CompiledStateGraph:
    """START -> assistant -> END, where assistant is the chat graph compiled as a subgraph (its own namespace)."""
    inner = StateGraph(MessagesState)
    inner.add_node("reply", reply)
    inner.add_edge(START, "reply")
    inner.add_edge("reply", END)
    outer = StateGraph(MessagesState)
    outer.add_node("assistant", inner.compile())
    outer.add_edge(START, "assistant")
    outer.add_edge("assistant", END)
    return outer.compile(checkpointer=saver)


def build_sample_db(folder: Path) -> tuple[Path, dict[str, int], dict[str, int], dict[str, int], dict[str, int]]:
    """A SqliteSaver file with five threads of four graphs (one with a subgraph).

    Returns (path, turns, checkpoints, writes, inputs): turns counts the root namespace's source-"input"
    checkpoints per thread, inputs those of every namespace, checkpoints and writes the rows per thread.
    """
    path = folder / "sample.db"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        chat = build_chat_graph(saver)
        for text in TURNS[:2]:
            say(chat, "trip-a", text)
        say(chat, "trip-b", TURNS[0])
        _fan_out_graph(saver).invoke({}, {"configurable": {"thread_id": "fan-out"}})
        longer = check_in_graph(saver)
        for text in TURNS:
            say(longer, "check-in", text)
        nested = _nested_graph(saver)
        for text in TURNS[:2]:
            say(nested, "escalation", text)
    con = sqlite3.connect(path)
    try:
        checkpoints = dict(con.execute("SELECT thread_id, COUNT(*) FROM checkpoints GROUP BY thread_id").fetchall())
        writes = dict(con.execute("SELECT thread_id, COUNT(*) FROM writes GROUP BY thread_id").fetchall())
        turns = {thread: 0 for thread in checkpoints}
        inputs = dict(turns)
        for thread, namespace, metadata in con.execute("SELECT thread_id, checkpoint_ns, metadata FROM checkpoints"):
            is_input = json.loads(metadata)["source"] == "input"
            inputs[thread] += is_input
            turns[thread] += is_input and namespace == ""
    finally:
        con.close()
    return path, turns, checkpoints, writes, inputs


@exercise("02.3")
def check_turns_per_thread(turns_per_thread: Any) -> str:
    with tempfile.TemporaryDirectory(prefix="course-02-check-") as folder:
        path, expected, checkpoints, writes, inputs = build_sample_db(Path(folder))
        with closing(sqlite3.connect(path)) as file_connection, closing(sqlite3.connect(":memory:")) as connection:
            file_connection.backup(connection)  # the answer gets a connection, not a path: it writes the query
            try:
                result = call_answer(turns_per_thread, connection, what="turns_per_thread(connection)")
            except sqlite3.ProgrammingError as exc:
                raise Fail(f"sqlite3 raised ProgrammingError: {exc}; the connection is the dashboard's, "
                           "open and in use: query it, do not close it") from None
            except sqlite3.OperationalError as exc:
                message = str(exc)
                if "no such table" in message:
                    raise Fail(f"sqlite3 says {message!r}: each saver names its own tables, and SqliteSaver's are "
                               "checkpoints and writes (checkpoint_writes is PostgresSaver's); "
                               "list them from sqlite_master") from None
                raise Fail(f"sqlite3 raised OperationalError: {message}; "
                           "try your query on the file in the chapter first") from None
            try:
                connection.execute("SELECT 1").fetchone()
            except sqlite3.ProgrammingError:
                raise Fail("your function closed the connection it was given; it belongs to the dashboard, "
                           "which keeps using it: query it and leave it open") from None
    expect_type(result, dict, "thread_id -> number of turns; dict(rows) turns (thread_id, count) rows into one")
    if result == expected:
        counted = ", ".join(f"{t}={n}" for t, n in sorted(expected.items()))
        return (f"{len(expected)} threads of four graphs: {counted} turns, one checkpoint with source 'input' per "
                "turn (default durability) in the root namespace (checkpoint_ns = ''); the subgraph's own 'input' "
                "checkpoints left out")
    if result == inputs:
        raise Fail("you counted every namespace: the escalation thread's subgraph saves a source 'input' "
                   "checkpoint of its own under its checkpoint_ns each time it is called; a turn is an input of "
                   "the root graph, checkpoint_ns = ''")
    if result == checkpoints:
        raise Fail("these are the row counts of the checkpoints table, one per checkpoint; a turn makes several "
                   "(its input, then one per step): count only the checkpoint each turn saves when its input arrives "
                   "(the metadata says which)")
    if result == writes:
        raise Fail("these are the row counts of the writes table; a turn's checkpoints are in the checkpoints table, "
                   "and its metadata says which checkpoint saved the input")
    if result == {t: n // 3 for t, n in checkpoints.items()}:
        raise Fail("a row count divided by 3 fits only the one-node chat graph; the check-in thread's graph makes "
                   "more checkpoints per turn: read each checkpoint's metadata instead")
    missing = sorted(set(expected) - set(result))
    if missing:
        raise Fail(f"thread(s) {missing} are missing; group by thread_id over the whole checkpoints table")
    extra = sorted(set(result) - set(expected), key=str)
    if extra:
        raise Fail(f"unexpected key(s) {extra}; the keys are the thread_id values")
    wrong = sorted(t for t in expected if result[t] != expected[t])
    raise Fail(f"the count for {wrong[0]!r} is {result[wrong[0]]!r}, not {expected[wrong[0]]}; count the checkpoints "
               "of that thread whose metadata source is 'input' (the metadata column is JSON)")
