"""Checks for chapter 03 (super-steps).

03.1 compares a prediction with the steps a real run of the chapter's booking graph takes
(``helpers.step_timeline.build_booking_flow``, the graph the chapter shows, so the check
does not depend on notebook variables). 03.2 and 03.3 call the learner's function
directly on edge cases, then run it inside a real graph.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from ..step_timeline import build_booking_flow, timeline_rows
from .protocol import Fail, call_answer, exercise, expect_type


@cache
def steps_of_run(route: str) -> dict[str, int]:
    """{node: step} for the business nodes of a real run of the chapter's booking graph on ``route``."""
    graph = build_booking_flow(InMemorySaver())
    config = {"configurable": {"thread_id": f"check-03-1-{route}"}}
    graph.invoke({"route": route}, config)
    return {node: row["step"] for row in timeline_rows(graph, config) for node in row["nodes run"]
            if node != "__start__"}


# ---------------------------------------------------------------------------------------
# 03.1


@exercise("03.1")
def check_steps_by_node(answer: Any) -> str:
    expect_type(answer, dict, "node name -> step number")
    truth = steps_of_run("BER-LIS")
    answer = {k: v for k, v in answer.items() if k != "__start__"}  # harmless if included
    if "request_approval" in answer:
        raise Fail("request_approval does not run on BER-LIS: the fare 180 is not above 500, so the conditional "
                   "edge picks book; leave nodes that do not run out")
    missing = sorted(set(truth) - set(answer))
    if missing:
        raise Fail(f"missing node(s) {missing}; list every business node that runs")
    unknown = sorted(set(answer) - set(truth), key=str)
    if unknown:
        raise Fail(f"{unknown} is not a node of this graph; the nodes are {sorted(truth)} (and request_approval)")
    for node, step in answer.items():
        expect_type(step, int, f"the step of {node}")
    if answer["lookup_seat"] != answer["lookup_fare"]:
        raise Fail("lookup_seat and lookup_fare both follow START, so they run in parallel in the same super-step")
    if answer == {node: step - 1 for node, step in truth.items()}:
        raise Fail("everything is one step too early: step -1 is the input checkpoint and step 0 is the internal "
                   "__start__ task that applies the input; the first nodes run in step 1")
    wrong = sorted(node for node in truth if answer[node] != truth[node])
    if wrong:
        raise Fail(f"the step of {wrong[0]!r} is off; count one super-step per level: the lookups, then quote "
                   "(which waits for both), then the node the conditional edge picks")
    return "lookups together in step 1, quote in 2, book in 3 (request_approval never runs)"


# ---------------------------------------------------------------------------------------
# 03.2


REDUCER_CASES = [
    ({}, {"LH": 420}, {"LH": 420}),
    ({"LH": 420, "TP": 510}, {"TP": 380}, {"LH": 420, "TP": 380}),
    ({"LH": 420}, {"LH": 450, "TP": 380}, {"LH": 420, "TP": 380}),
    ({"AF": 300}, {}, {"AF": 300}),
]


def _fan_out_with(reducer: Callable[[Any, Any], Any]) -> CompiledStateGraph:
    # functional syntax: the annotation must hold this very reducer object, not a string
    fares_state = TypedDict("FaresState", {"route": str, "fares": Annotated[dict, reducer]}, total=False)  # noqa: UP013
    builder = StateGraph(fares_state)
    builder.add_node("fares_a", lambda state: {"fares": {"LH": 420, "TP": 510}})
    builder.add_node("fares_b", lambda state: {"fares": {"TP": 380, "AF": 610}})
    builder.add_edge(START, "fares_a")
    builder.add_edge(START, "fares_b")
    builder.add_edge("fares_a", END)
    builder.add_edge("fares_b", END)
    return builder.compile()


@exercise("03.2")
def check_keep_cheapest(keep_cheapest: Any) -> str:
    for current, new, expected in REDUCER_CASES:
        before = copy.deepcopy(current)
        try:
            result = call_answer(keep_cheapest, current, new, what="keep_cheapest(current, new)")
        except TypeError as exc:
            raise Fail(f"keep_cheapest({current}, {new}) raised TypeError ({exc}); the values are dicts: "
                       "operator.add does not work on dicts, merge them key by key") from None
        expect_type(result, dict, f"the merged fares for keep_cheapest({current}, {new})")
        if current != before:
            raise Fail(f"keep_cheapest changed `current` in place ({before} became {current}); copy it first, "
                       "e.g. merged = dict(current)")
        if result == expected:
            continue
        lost = sorted(set(expected) - set(result))
        if lost:
            raise Fail(f"keep_cheapest({current}, {new}) lost {lost}; keep airlines from both dicts")
        dearer = sorted(a for a in expected if result.get(a) != expected[a])
        raise Fail(f"keep_cheapest({current}, {new}) gave {dearer[0]}={result.get(dearer[0])!r}; where both dicts "
                   "have an airline, keep the lower price")
    final = _fan_out_with(keep_cheapest).invoke({"route": "BER-LIS"})
    expected = {"LH": 420, "TP": 380, "AF": 610}
    if final.get("fares") != expected:
        raise Fail(f"in a real fan-out graph the fares came out {final.get('fares')!r}, expected {expected}")
    return "parallel quotes merge into the cheapest fare per airline: " + str(dict(sorted(expected.items())))


# ---------------------------------------------------------------------------------------
# 03.3


ROUTE_CASES = [
    ({"fare": 180}, "book", "a fare of 180 is below the limit"),
    ({"fare": 500}, "book", "a fare of exactly 500 is not above the limit (use >, not >=)"),
    ({"fare": 501}, "request_approval", "a fare of 501 is above the limit of 500"),
    ({"fare": 1450}, "request_approval", "a fare of 1450 with no 'approved' key needs approval"),
    ({"fare": 1450, "approved": False}, "request_approval", "approved=False means not approved yet"),
    ({"fare": 1450, "approved": True}, "book", "an approved booking goes to book even above the limit"),
]


@exercise("03.3")
def check_route_booking(route_booking: Any) -> str:
    for state, expected, why in ROUTE_CASES:
        try:
            result = call_answer(route_booking, dict(state), what="route_booking(state)")
        except KeyError as exc:
            raise Fail(f"route_booking({state}) raised KeyError {exc}; the 'approved' key may be missing: "
                       "use state.get('approved')") from None
        expect_type(result, str, f"a node name for route_booking({state})")
        if result not in ("book", "request_approval"):
            raise Fail(f"route_booking({state}) returned {result!r}; return a node name: 'book' or 'request_approval'")
        if result != expected:
            raise Fail(f"route_booking({state}) returned {result!r}, expected {expected!r}: {why}")
    graph = build_booking_flow(router=route_booking)
    runs = {route: graph.invoke({"route": route})["status"] for route in ("BER-LIS", "BER-SYD")}
    approved = graph.invoke({"route": "BER-SYD", "approved": True})["status"]
    if runs != {"BER-LIS": "booked", "BER-SYD": "waiting for approval"} or approved != "booked":
        raise Fail(f"as a conditional edge your router gave {runs} and approved BER-SYD -> {approved!r}")
    return "as a conditional edge: BER-LIS is booked, BER-SYD waits for approval, an approved BER-SYD is booked"
