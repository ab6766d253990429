"""Checks for chapter 06 (pending writes)."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Callable
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import ExecutionInfo
from langgraph.types import RetryPolicy, StateSnapshot

from ..booking_crashes import booking_crash_trials, execution_info
from ..fare_lookup_graphs import (
    Airline,
    BookState,
    FlakyDesk,
    LookupState,
    WriteWatchSaver,
    build_booking_graph,
    build_lookup_graph,
    run_until_failure,
)
from .protocol import Fail, NotAttempted, call_answer, exercise, expect_keys, expect_type

# -- 06.1 ------------------------------------------------------------------------------

EXPECTED_CALLS = {"lookup_seat": 1, "lookup_fare": 3, "lookup_bags": 1, "price_trip": 1}


@exercise("06.1")
def check_predicted_calls(answer: Any) -> str:
    expect_type(answer, dict, "node name -> number of calls")
    expect_keys(answer, sorted(EXPECTED_CALLS), "node")
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


def _three_lookups(desk: FlakyDesk) -> CompiledStateGraph:
    builder = StateGraph(LookupState)
    builder.add_node("lookup_seat", lambda state: {"seat": desk.find_seat(state["route"])})
    builder.add_node("lookup_fare", lambda state: {"fare": desk.quote_fare(state["route"])})
    builder.add_node("lookup_bags", lambda state: {"bags": desk.find_bags(state["route"])})
    for name in ("lookup_seat", "lookup_fare", "lookup_bags"):
        builder.add_edge(START, name)
        builder.add_edge(name, END)
    return builder.compile(checkpointer=WriteWatchSaver(InMemorySaver(), desk))


def _lookup_snapshot(failing: str, *, three: bool = False, resume: bool = False) -> StateSnapshot:
    services = ("find_seat", "quote_fare", "find_bags") if three else ("find_seat", "quote_fare")
    desk = FlakyDesk({failing: 1}, services)
    graph = (_three_lookups(desk) if three
             else build_lookup_graph(WriteWatchSaver(InMemorySaver(), desk), desk.find_seat, desk.quote_fare))
    config = {"configurable": {"thread_id": "diagnose"}}
    run_until_failure(graph, {"route": "PEK-SFO"}, config, desk)
    if resume:
        graph.invoke(None, config)
    return graph.get_state(config)


def _value_error_snapshot() -> StateSnapshot:
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


def _diagnosis_cases() -> list[tuple[str, StateSnapshot, dict[str, Any]]]:
    return [
        ("the seat/fare step of this chapter", _lookup_snapshot("quote_fare"),
         {"failed": {"lookup_fare": "TimeoutError"}, "saved": ["lookup_seat"]}),
        ("three lookups where the seat lookup failed", _lookup_snapshot("find_seat", three=True),
         {"failed": {"lookup_seat": "TimeoutError"}, "saved": ["lookup_bags", "lookup_fare"]}),
        ("a one-node graph that raised ValueError", _value_error_snapshot(),
         {"failed": {"check_route": "ValueError"}, "saved": []}),
        ("a thread that was resumed and completed", _lookup_snapshot("quote_fare", resume=True),
         {"failed": {}, "saved": []}),
    ]


@exercise("06.2")
def check_diagnose(diagnose: Any) -> str:
    for label, snapshot, expected in _diagnosis_cases():
        got = call_answer(diagnose, snapshot, what="diagnose(snapshot)")
        expect_type(got, dict, "{'failed': {...}, 'saved': [...]}")
        missing = sorted({"failed", "saved"} - set(got))
        if missing:
            raise Fail(f"the result has no key(s) {missing}; "
                       "return {'failed': {node: error_type}, 'saved': [nodes]}")
        expect_type(got["failed"], dict, "'failed': node name -> error type name")
        failed = got["failed"]
        for error in sorted(map(repr, failed.values())):
            if error == "'str'":
                raise Fail("you reported the error type as 'str': task.error holds the exception's repr as a "
                           "string, e.g. \"TimeoutError('...')\"; take the part before '('")
            if "(" in error:
                raise Fail(f"give only the type name, not the whole repr {error[:40]}: take the part before '('")
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

KeyFunction = Callable[[BookState, ExecutionInfo, str], str]
SeatKey = Callable[[BookState, ExecutionInfo], str]
RUNTIME_IDS = ("task_id", "checkpoint_id", "checkpoint_ns")


def _request() -> BookState:
    return {"command_id": str(uuid.uuid4()), "seat": "14C"}


def _sample_info() -> ExecutionInfo:
    return ExecutionInfo(checkpoint_id=str(uuid.uuid4()), checkpoint_ns=f"book_seat:{uuid.uuid4()}",
                         task_id=str(uuid.uuid4()), thread_id="booking-7", run_id=None, node_attempt=1)


def _key_of(key: KeyFunction, state: BookState, info: ExecutionInfo, effect: str, case: str) -> str:
    value = call_answer(key, state, info, effect, what="idempotency_key(state, info, effect)", case=case)
    expect_type(value, str, "the idempotency key")
    return value


def _what_changed(key: SeatKey, state: BookState, first: ExecutionInfo, later: ExecutionInfo) -> str:
    """Which of the runtime's fields, copied from the first attempt, make the later key equal again."""
    target = key(state, first)
    for fields, hint in ((("node_attempt", "node_first_attempt_time"),
                          "info.node_attempt counts the attempts of a RetryPolicy, so it changes on every retry"),
                         (("run_id",), "info.run_id is the run's, and every run (a resume too) can have its own"),
                         (RUNTIME_IDS, "info.task_id (and the checkpoint id it hashes) changes when the process "
                                       "died before the step's checkpoint was saved, as under the default "
                                       "durability here; build the key from state['command_id'] instead")):
        if key(state, later.patch(**{name: getattr(first, name) for name in fields})) == target:
            return hint
    return "the key must depend only on what the client sends again with a retry, such as state['command_id']"


@exercise("06.3")
def check_idempotency_key(idempotency_key: Any) -> str:
    if idempotency_key is Ellipsis:
        raise NotAttempted("replace the ... with your function")
    request, info = _request(), _sample_info()
    first = _key_of(idempotency_key, request, info, "book_seat", "a booking command")
    if first == request["command_id"]:
        raise Fail("the key is the command ID itself, so a second effect of the same command (a hotel booking, say) "
                   "would get the same key; combine the command ID with the effect's name, e.g. with uuid.uuid5")
    # a second effect of the same command, in the same attempt: it needs a key of its own
    hotel = _key_of(idempotency_key, request, info, "book_hotel", "the hotel booking of the same command")
    if hotel == first:
        raise Fail("two effects of one command (effect 'book_seat' and 'book_hotel') got the same key, so the hotel "
                   "would see a repeat of the airline's request: build the key from the command ID and the effect")
    # a second command on the same thread: a new run, so the runtime's IDs are new too
    other = _key_of(idempotency_key, {**_request(), "seat": request["seat"]}, _sample_info(), "book_seat",
                    "a second booking command")
    if other == first:
        raise Fail("two different commands (two command_ids) got the same key, so the airline would refuse a genuine "
                   "second booking: build the key from state['command_id']")

    def seat_key(state: BookState, info: ExecutionInfo) -> str:
        """What book_seat sends: the learner's key for the effect 'book_seat'."""
        return idempotency_key(state, info, "book_seat")

    # a RetryPolicy retry inside one run: node_attempt 1, then 2
    airline, seen = Airline(fail_after_booking=1), []

    def logged_key(state: BookState, info: ExecutionInfo) -> str:
        seen.append(info)
        return seat_key(state, info)

    retrying = build_booking_graph(InMemorySaver(), airline.book, logged_key,
                                   retry_policy=RetryPolicy(initial_interval=0.001, jitter=False))
    request = _request()
    retrying.invoke(request, {"configurable": {"thread_id": "check-06-3-retry"}, "run_id": uuid.uuid4()})
    if len(airline.bookings) != 1:
        raise Fail(f"a RetryPolicy retry booked {len(airline.bookings)} times: "
                   f"{_what_changed(seat_key, request, seen[0], seen[-1])}")

    # a real crash: a child process dies right after the airline booked (default durability), resumed here.
    # The child is a fork of this process (booking_crashes.fork_child, needs os.fork): it must run the
    # learner's idempotency_key, a function defined in the notebook that no other interpreter can import.
    request = _request()
    with tempfile.TemporaryDirectory(prefix="course-06-check-") as workdir:
        # the child's saver takes 1 s per write: the crash surely comes first (under async nothing waits for it)
        [trial] = booking_crash_trials(workdir, seat_key, request, modes=[None], trials=1, put_delay=1.0)
    crashed, resumed = (attempt["info"] for attempt in trial["attempts"])
    if trial["bookings"] != 1:
        hint = _what_changed(seat_key, request, execution_info(crashed), execution_info(resumed))
        raise Fail(f"after a real crash (a child process died right after the airline booked) and a resume "
                   f"({trial['resumed with']}), the airline booked {trial['bookings']} times: the key changed; {hint}")
    return ("one booking across a real crash in a child process (default durability), one across a RetryPolicy "
            "retry, a new key for a new command and another for a second effect")
