"""Checks for chapter 03 (super-steps).

03.1 compares a prediction with the steps a real run takes of the chapter's booking graph
with one more node (built here from the chapter's nodes in ``helpers.step_timeline``, so
the check does not depend on notebook variables). 03.2 calls the learner's reducer on edge
cases, then inside a real graph; 03.3 builds the learner's graph around counting stand-ins
and fails it once.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import InvalidUpdateError
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from ..step_timeline import (
    Booking,
    book,
    build_booking_flow,
    lookup_fare,
    lookup_seat,
    needs_approval,
    quote,
    request_approval,
)
from .protocol import Fail, call_answer, exercise, expect_type


def convert_fare(state: Any) -> dict[str, Any]:
    return {"fare": state["fare"]}  # the stand-in fares are in euros already


def _booking_with_conversion(checkpointer: Any = None) -> CompiledStateGraph:
    """Exercise 03.1's graph: the chapter's booking flow, with convert_fare between lookup_fare and the join."""
    builder = StateGraph(Booking)
    for node in (lookup_seat, lookup_fare, convert_fare, quote, book, request_approval):
        builder.add_node(node)
    builder.add_edge(START, "lookup_seat")
    builder.add_edge(START, "lookup_fare")
    builder.add_edge("lookup_fare", "convert_fare")
    builder.add_edge(["lookup_seat", "convert_fare"], "quote")
    builder.add_conditional_edges("quote", needs_approval, ["book", "request_approval"])
    builder.add_edge("book", END)
    builder.add_edge("request_approval", END)
    return builder.compile(checkpointer=checkpointer)


def task_steps(graph: CompiledStateGraph, inputs: Any, config: dict[str, Any]) -> dict[str, int]:
    """{node: step} from the task events of a real run (``__start__`` left out)."""
    steps: dict[str, int] = {}
    for event in graph.stream(inputs, config, stream_mode="debug"):
        if event["type"] == "task" and event["payload"]["name"] != "__start__":
            steps[event["payload"]["name"]] = event["step"]
    return steps


@cache
def steps_of_run(route: str, converted: bool = True) -> dict[str, int]:
    """{node: step} for the business nodes of a real run on ``route`` (exercise 03.1's graph, or the chapter's)."""
    graph = _booking_with_conversion(InMemorySaver()) if converted else build_booking_flow(InMemorySaver())
    return task_steps(graph, {"route": route}, {"configurable": {"thread_id": f"check-03-1-{route}"}})


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
        raise Fail(f"missing node(s) {missing}; list every business node that runs, the new convert_fare included")
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
    if answer["convert_fare"] <= answer["lookup_fare"]:
        raise Fail("convert_fare runs after lookup_fare: it is planned from lookup_fare's write, one super-step "
                   "later")
    if answer["quote"] != truth["quote"]:
        raise Fail(f"quote in step {answer['quote']} is off: it waits for both lookup_seat and convert_fare (a "
                   "join), so it runs in the step after the later of the two, however early the other one finished")
    wrong = sorted(node for node in truth if answer[node] != truth[node])
    if wrong:
        raise Fail(f"the step of {wrong[0]!r} is off; each node runs one super-step after the write that "
                   "triggers it, and the conditional edge after quote picks one node")
    return "lookups in step 1, convert_fare in 2, quote in 3 (the join waits for the later branch), book in 4"


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


class _Work:
    """Counting stand-ins for the errand: each call records the super-step it ran in."""

    def __init__(self, timeouts: int = 1) -> None:
        self.steps: dict[str, list[int]] = {"find_seat": [], "price_fare": [], "hold_fare": []}
        self.timeouts = timeouts

    def _record(self, name: str) -> None:
        from langgraph.config import get_config

        self.steps[name].append(get_config().get("metadata", {}).get("langgraph_step", -99))

    def find_seat(self) -> str:
        self._record("find_seat")
        return "14C"

    def price_fare(self) -> int:
        self._record("price_fare")
        return 1210

    def hold_fare(self) -> str:
        self._record("hold_fare")
        if self.timeouts > 0:
            self.timeouts -= 1
            raise TimeoutError("the fare service timed out")
        return "held"


@exercise("03.3")
def check_build_errand(build_errand: Any) -> str:
    work = _Work()
    graph = call_answer(build_errand, InMemorySaver(), work.find_seat, work.price_fare, work.hold_fare,
                        what="build_errand(checkpointer, find_seat, price_fare, hold_fare)")
    if not hasattr(graph, "invoke") or not hasattr(graph, "get_state"):
        raise Fail(f"build_errand returned {type(graph).__name__}; return the compiled graph: "
                   "builder.compile(checkpointer=checkpointer)")
    if getattr(graph, "checkpointer", None) is None:
        raise Fail("your graph has no checkpointer, so a failed run cannot be resumed: "
                   "compile it with builder.compile(checkpointer=checkpointer)")
    config = {"configurable": {"thread_id": "check-03-3"}}
    try:
        graph.invoke({}, config)
    except TimeoutError:
        pass
    except InvalidUpdateError:
        raise Fail("two of your nodes wrote the same key in one super-step (InvalidUpdateError): store seat and "
                   "fare each under its own key") from None
    except Exception as exc:
        raise Fail(f"the first run raised {type(exc).__name__}: {str(exc).splitlines()[0]}") from None
    else:
        raise Fail("the first run did not fail although hold_fare timed out: let the TimeoutError propagate "
                   "(do not catch it in the node), so that the thread can be resumed")
    try:
        final = graph.invoke(None, config)
    except Exception as exc:
        raise Fail(f"the resume (invoke(None, config)) raised {type(exc).__name__}: {exc}") from None
    steps = work.steps
    if not steps["find_seat"] or not steps["price_fare"] or not steps["hold_fare"]:
        never = [name for name, ran in steps.items() if not ran]
        raise Fail(f"{never} never ran; call all three functions, each in a node")
    expected = {"seat": "14C", "fare": 1210, "hold": "held"}
    got = {key: final.get(key) for key in expected} if isinstance(final, dict) else final
    if got != expected:
        raise Fail(f"after the resume the state holds {got}, expected {expected}: store each function's return "
                   "value under its key")
    # With fewer than three nodes, one node holds two of the calls and reruns them: say that first.
    # Otherwise the steps first: they are the same on every run, while how often a sibling of the
    # failed hold ran again can depend on timing (a running def sibling's write may be lost).
    nodes = [name for name in getattr(graph, "nodes", {}) if not name.startswith("__")]
    if len(nodes) < 3 and (len(steps["find_seat"]) > 1 or len(steps["price_fare"]) > 1):
        raise Fail(f"after the failure the resume ran find_seat {len(steps['find_seat'])}x and price_fare "
                   f"{len(steps['price_fare'])}x in all: a failed node restarts from its first line, so put "
                   "hold_fare in a node of its own, after the two others")
    if steps["find_seat"][0] != steps["price_fare"][0]:
        raise Fail(f"find_seat ran in step {steps['find_seat'][0]} and price_fare in step {steps['price_fare'][0]}: "
                   "they do not depend on each other, so give both an edge from START (a fan-out), and let "
                   "hold_fare wait for both")
    if min(steps["hold_fare"]) <= max(steps["find_seat"][0], steps["price_fare"][0]):
        raise Fail("hold_fare ran in the same super-step as the others, before seat and fare were known: make its "
                   "node wait for both, e.g. builder.add_edge([seat_node, fare_node], hold_node)")
    if len(steps["find_seat"]) > 1 or len(steps["price_fare"]) > 1:
        raise Fail(f"after the failure the resume ran find_seat {len(steps['find_seat'])}x and price_fare "
                   f"{len(steps['price_fare'])}x in all: a failed node restarts from its first line, so put "
                   "hold_fare in a node of its own, after the two others")
    if len(steps["hold_fare"]) != 2:
        raise Fail(f"hold_fare ran {len(steps['hold_fare'])}x; it should run twice: once failing, once on resume")
    return "seat and fare in one super-step, the hold after both; the resume re-ran only the hold"
