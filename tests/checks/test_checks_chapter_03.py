"""Wrong answers for chapter 03's exercises must fail with a hint (same shape as chapter 00)."""

import operator
from typing import TypedDict

from langgraph.graph import START, StateGraph

from helpers.checks import PASSED, evaluate


def reducer_or(current, new):
    return current | new  # the newer price wins, not the cheaper one


def reducer_right(current, new):
    return new


def reducer_in_place(current, new):
    for airline, price in new.items():
        current[airline] = min(price, current.get(airline, price))
    return current


def reducer_min_only_shared(current, new):
    return {a: min(current[a], new[a]) for a in current if a in new}


class Errand(TypedDict, total=False):
    seat: str
    fare: int
    hold: str


def _graph(nodes, edges, checkpointer):
    builder = StateGraph(Errand)
    for name, fn in nodes.items():
        builder.add_node(name, fn)
    for source, target in edges:
        builder.add_edge(source, target)
    return builder.compile(checkpointer=checkpointer)


def _nodes(find_seat, price_fare, hold_fare):
    return {"seat": lambda state: {"seat": find_seat()}, "fare": lambda state: {"fare": price_fare()},
            "hold": lambda state: {"hold": hold_fare()}}


def errand_right(checkpointer, find_seat, price_fare, hold_fare):
    return _graph(_nodes(find_seat, price_fare, hold_fare),
                  [(START, "seat"), (START, "fare"), (["seat", "fare"], "hold")], checkpointer)


def errand_two_edges_to_hold(checkpointer, find_seat, price_fare, hold_fare):
    """No join, but both lookups finish in one step, so hold runs once: also right."""
    return _graph(_nodes(find_seat, price_fare, hold_fare),
                  [(START, "seat"), (START, "fare"), ("seat", "hold"), ("fare", "hold")], checkpointer)


def errand_in_a_row(checkpointer, find_seat, price_fare, hold_fare):
    """The cell 'errand_graph([seat_only, fare_only, hold_only])', with the check's functions."""
    builder = StateGraph(Errand)
    builder.add_sequence(list(_nodes(find_seat, price_fare, hold_fare).items()))
    builder.add_edge(START, "seat")
    return builder.compile(checkpointer=checkpointer)


def errand_one_node(checkpointer, find_seat, price_fare, hold_fare):
    """The cell 'do_everything': one big node."""
    def do_everything(state):
        return {"seat": find_seat(), "fare": price_fare(), "hold": hold_fare()}
    return _graph({"do_everything": do_everything}, [(START, "do_everything")], checkpointer)


def errand_all_parallel(checkpointer, find_seat, price_fare, hold_fare):
    return _graph(_nodes(find_seat, price_fare, hold_fare),
                  [(START, "seat"), (START, "fare"), (START, "hold")], checkpointer)


def errand_no_checkpointer(checkpointer, find_seat, price_fare, hold_fare):
    return errand_right(None, find_seat, price_fare, hold_fare)


def errand_swallows_error(checkpointer, find_seat, price_fare, hold_fare):
    def hold_or_give_up():
        try:
            return hold_fare()
        except TimeoutError:
            return "not held"
    return errand_right(checkpointer, find_seat, price_fare, hold_or_give_up)


def errand_wrong_keys(checkpointer, find_seat, price_fare, hold_fare):
    nodes = {"seat": lambda state: {"seat": find_seat()}, "fare": lambda state: {"fare": str(price_fare())},
             "hold": lambda state: {"hold": hold_fare()}}
    return _graph(nodes, [(START, "seat"), (START, "fare"), (["seat", "fare"], "hold")], checkpointer)


def errand_both_write_seat(checkpointer, find_seat, price_fare, hold_fare):
    nodes = {"seat": lambda state: {"seat": find_seat()}, "fare": lambda state: {"seat": price_fare()},
             "hold": lambda state: {"hold": hold_fare()}}
    return _graph(nodes, [(START, "seat"), (START, "fare"), (["seat", "fare"], "hold")], checkpointer)


def errand_builder_only(checkpointer, find_seat, price_fare, hold_fare):
    return StateGraph(Errand)


RIGHT_STEPS = {"lookup_seat": 1, "lookup_fare": 1, "convert_fare": 2, "quote": 3, "book": 4}
BER_SYD_TABLE = {"lookup_seat": 1, "lookup_fare": 1, "quote": 2, "request_approval": 3}   # cells 12, 27, 40
BER_LIS_CHAPTER_GRAPH = {"lookup_seat": 1, "lookup_fare": 1, "quote": 2, "book": 3}

WRONG_ANSWERS = {
    "03.1": [
        (({**RIGHT_STEPS, "request_approval": 4},), "does not run on BER-LIS"),
        ((BER_LIS_CHAPTER_GRAPH,), "the new convert_fare included"),
        (({**RIGHT_STEPS, "lookup_fare": 2, "convert_fare": 3},), "run in parallel in the same super-step"),
        (({node: step - 1 for node, step in RIGHT_STEPS.items()},), "one step too early"),
        (({**RIGHT_STEPS, "convert_fare": 1, "quote": 2, "book": 3},), "convert_fare runs after lookup_fare"),
        (({**RIGHT_STEPS, "quote": 2, "book": 3},), "the later of the two"),
        (({**RIGHT_STEPS, "book": 5},), "the step of 'book' is off"),
        (({**RIGHT_STEPS, "summarize": 3},), "not a node of this graph"),
        (([1, 1, 2, 3, 4],), "expected a dict"),
    ],
    "03.2": [
        ((reducer_or,), "keep the lower price"),
        ((reducer_right,), "lost"),
        ((operator.add,), "operator.add does not work on dicts"),
        ((reducer_in_place,), "in place"),
        ((reducer_min_only_shared,), "lost"),
        ((42,), "expected a function"),
    ],
    "03.3": [
        ((errand_in_a_row,), "give both an edge from START"),
        ((errand_one_node,), "a failed node restarts from its first line"),
        ((errand_all_parallel,), "before seat and fare were known"),
        ((errand_no_checkpointer,), "compile it with builder.compile(checkpointer=checkpointer)"),
        ((errand_swallows_error,), "let the TimeoutError propagate"),
        ((errand_wrong_keys,), "store each function's return value under its key"),
        ((errand_both_write_seat,), "under its own key"),
        ((errand_builder_only,), "return the compiled graph"),
        ((42,), "expected a function"),
    ],
}

# What a learner gets by pasting the nearest visible cell (or reading a visible table).
COPY_ATTACKS = {
    "03.1": [((BER_SYD_TABLE,), "the BER-SYD step tables (debug events, history, timeline)"),
             ((BER_LIS_CHAPTER_GRAPH,), "the BER-SYD tables with book in place of request_approval")],
    "03.2": [((operator.add,), "the reducer of the cell 'NotesWithReducer' (operator.add)"),
             ((reducer_or,), "a dict merge, the nearest thing to the notes reducer for dicts")],
    "03.3": [((errand_in_a_row,), "the cell 'errand_graph' with three nodes in a row"),
             ((errand_one_node,), "the cell 'do_everything' (one node)")],
}


def test_right_answers_pass():
    def keep_cheapest(current, new):
        merged = dict(current)
        for airline, price in new.items():
            merged[airline] = min(price, merged.get(airline, price))
        return merged

    assert evaluate("03.1", dict(RIGHT_STEPS)).status == PASSED
    assert evaluate("03.1", {**RIGHT_STEPS, "__start__": 0}).status == PASSED
    assert evaluate("03.2", keep_cheapest).status == PASSED
    assert evaluate("03.3", errand_right).status == PASSED
    assert evaluate("03.3", errand_two_edges_to_hold).status == PASSED


def test_truth_comes_from_a_real_run():
    from helpers.checks.chapter_03 import steps_of_run

    assert steps_of_run("BER-LIS") == RIGHT_STEPS
    assert steps_of_run("BER-LIS", converted=False) == BER_LIS_CHAPTER_GRAPH
    assert steps_of_run("BER-SYD", converted=False) == BER_SYD_TABLE
