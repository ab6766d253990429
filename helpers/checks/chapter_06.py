"""Checks for chapter 06 (pending writes)."""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import ExecutionInfo

from ..fare_lookup_graphs import (BookingService, LookupProbe, WriteWatchSaver, book_with_retry,
                                  build_booking_graph, build_lookup_graph, run_until_failure)
from .protocol import Fail, call_answer, exercise, expect_type

# -- 06.1 ------------------------------------------------------------------------------

EXPECTED_CALLS = {"lookup_seat": 1, "lookup_fare": 3, "lookup_bags": 1, "price_trip": 1}


@exercise("06.1")
def predict_three_lookups(answer: Any) -> str:
    expect_type(answer, dict, "node name -> number of calls")
    missing = sorted(set(EXPECTED_CALLS) - set(answer))
    if missing:
        raise Fail(f"missing node(s) {missing}; give a count for each of {sorted(EXPECTED_CALLS)}")
    for node in sorted(EXPECTED_CALLS):
        expect_type(answer[node], int, f"the number of calls of {node}")
    for node in ("lookup_seat", "lookup_bags"):
        if answer[node] != 1:
            raise Fail(f"{node}: {answer[node]} calls? It succeeded in the first invoke, and its write was saved "
                       "as a pending write: resumes apply that write instead of running the node again")
    if answer["lookup_fare"] != 3:
        raise Fail(f"lookup_fare: {answer['lookup_fare']} calls? It fails on two calls and succeeds on the next; "
                   "count every call, the failed ones too (one per invoke)")
    if answer["price_trip"] != 1:
        raise Fail(f"price_trip: {answer['price_trip']} calls? It belongs to the next super-step, which starts only "
                   "once the whole lookup step has completed (in the third invoke), and then it succeeds")
    return "seat and bags once (saved), fare three times, price_trip once"


# -- 06.2 ------------------------------------------------------------------------------


class _RouteState(TypedDict, total=False):
    route: str


def _reject_route(state: _RouteState) -> dict[str, Any]:
    raise ValueError(f"unknown route {state['route']!r}")


def _lookup_snapshot(nodes: tuple[str, ...], failing: str, *, resume: bool = False) -> Any:
    probe = LookupProbe({failing: 1})
    graph = build_lookup_graph(WriteWatchSaver(InMemorySaver(), probe), probe, nodes)
    config = {"configurable": {"thread_id": "diagnose"}}
    run_until_failure(graph, {"route": "PEK-SFO"}, config, probe)
    if resume:
        graph.invoke(None, config)
    return graph.get_state(config)


def _value_error_snapshot() -> Any:
    builder = StateGraph(_RouteState)
    builder.add_node("check_route", _reject_route)
    builder.add_edge(START, "check_route")
    builder.add_edge("check_route", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "diagnose"}}
    try:
        graph.invoke({"route": "XXX-YYY"}, config)
    except ValueError:
        pass
    return graph.get_state(config)


def _diagnosis_cases() -> list[tuple[str, Any, dict[str, Any]]]:
    return [
        ("the seat/fare step of this chapter", _lookup_snapshot(("lookup_seat", "lookup_fare"), "lookup_fare"),
         {"failed": {"lookup_fare": "TimeoutError"}, "saved": ["lookup_seat"]}),
        ("three lookups where the seat lookup failed",
         _lookup_snapshot(("lookup_seat", "lookup_fare", "lookup_bags"), "lookup_seat"),
         {"failed": {"lookup_seat": "TimeoutError"}, "saved": ["lookup_bags", "lookup_fare"]}),
        ("a one-node graph that raised ValueError", _value_error_snapshot(),
         {"failed": {"check_route": "ValueError"}, "saved": []}),
        ("a thread that was resumed and completed",
         _lookup_snapshot(("lookup_seat", "lookup_fare"), "lookup_fare", resume=True),
         {"failed": {}, "saved": []}),
    ]


@exercise("06.2")
def diagnose_failed_step(diagnose: Any) -> str:
    for label, snapshot, expected in _diagnosis_cases():
        got = call_answer(diagnose, snapshot, what="diagnose(snapshot)")
        expect_type(got, dict, "{'failed': {...}, 'saved': [...]}")
        missing = sorted({"failed", "saved"} - set(got))
        if missing:
            raise Fail(f"the result has no key(s) {missing}; return {{'failed': {{node: error_type}}, 'saved': [nodes]}}")
        expect_type(got["failed"], dict, "'failed': node name -> error type name")
        failed = got["failed"]
        for node, error in sorted(failed.items(), key=repr):
            if error == "str":
                raise Fail("you reported the error type as 'str': task.error holds the exception's repr as a "
                           "string, e.g. \"TimeoutError('...')\"; take the part before '('")
            if isinstance(error, str) and "(" in error:
                raise Fail(f"give only the type name, not the whole repr {error[:40]!r}: take the part before '('")
        if failed != expected["failed"]:
            raise Fail(f"for {label}, 'failed' should be {expected['failed']}, got {failed}; "
                       "look at the tasks whose .error is not None")
        saved = got["saved"]
        if not isinstance(saved, list):
            raise Fail(f"'saved' should be a sorted list of node names, got {type(saved).__name__}")
        if sorted(map(str, saved)) == expected["saved"] and saved != expected["saved"]:
            raise Fail("'saved' has the right nodes but is not sorted; return sorted(...)")
        if saved != expected["saved"]:
            hint = ("a failed task has no saved result: look at task.result, not at task.error"
                    if set(saved) & set(expected["failed"])
                    else "the saved tasks are those whose .result is not None (a completed thread has no tasks left)")
            raise Fail(f"for {label}, 'saved' should be {expected['saved']}, got {saved}; {hint}")
    return "failed tasks and saved results read correctly on 4 real snapshots"


# -- 06.3 ------------------------------------------------------------------------------


def _info(**changes: Any) -> ExecutionInfo:
    base = ExecutionInfo(checkpoint_id="1f0-checkpoint-a", checkpoint_ns="book_seat:task-a", task_id="task-a",
                         thread_id="booking-7", run_id="run-1", node_attempt=1, node_first_attempt_time=1000.0)
    return base.patch(**changes)


@exercise("06.3")
def idempotency_key_check(idempotency_key: Any) -> str:
    first = call_answer(idempotency_key, _info(), what="idempotency_key(info)")
    expect_type(first, str, "the idempotency key")
    retry = call_answer(idempotency_key, _info(run_id="run-2", node_attempt=2, node_first_attempt_time=1005.0),
                        what="idempotency_key(info)")
    if retry != first:
        raise Fail("a retry of the same task got another key: leave out what changes between attempts "
                   "(run_id, node_attempt, node_first_attempt_time)")
    other_task = call_answer(idempotency_key, _info(task_id="task-b", checkpoint_ns="book_seat:task-b"),
                             what="idempotency_key(info)")
    if other_task == first:
        raise Fail("two different tasks got the same key, so a genuinely new booking would be refused: "
                   "include info.task_id")
    other_thread = call_answer(idempotency_key, _info(thread_id="booking-8", checkpoint_id="1f0-checkpoint-z"),
                               what="idempotency_key(info)")
    if other_thread == first:
        raise Fail("two threads got the same key: include info.thread_id, so keys of different conversations "
                   "never collide")
    airline = BookingService()
    graph = build_booking_graph(InMemorySaver(), airline, key=idempotency_key)
    outcome = book_with_retry(graph, thread_id="check-06-3")
    if len(airline.bookings) != 1:
        raise Fail(f"in the book-then-fail run the airline still made {len(airline.bookings)} bookings; "
                   "the key must be equal for the failed call and its retry")
    return f"the retry reused the key: 1 booking ({outcome['final']}) for {airline.requests} requests"
