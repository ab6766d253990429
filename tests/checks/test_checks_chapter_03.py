"""Wrong answers for chapter 03's exercises must fail with a hint (same shape as chapter 00)."""

import operator

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


def route_ge(state):
    return "request_approval" if state["fare"] >= 500 and not state.get("approved") else "book"


def route_ignores_approval(state):
    return "request_approval" if state["fare"] > 500 else "book"


def route_key_error(state):
    return "request_approval" if state["fare"] > 500 and not state["approved"] else "book"


def route_reversed(state):
    return "book" if state["fare"] > 500 else "request_approval"


def route_bool(state):
    return state["fare"] > 500


RIGHT_STEPS = {"lookup_seat": 1, "lookup_fare": 1, "quote": 2, "book": 3}

WRONG_ANSWERS = {
    "03.1": [
        (({**RIGHT_STEPS, "request_approval": 3},), "does not run on BER-LIS"),
        (({"lookup_seat": 1, "lookup_fare": 2, "quote": 3, "book": 4},), "run in parallel in the same super-step"),
        (({"lookup_seat": 0, "lookup_fare": 0, "quote": 1, "book": 2},), "one step too early"),
        (({"lookup_seat": 1, "lookup_fare": 1, "quote": 2},), "missing node"),
        (({**RIGHT_STEPS, "book": 4},), "the step of 'book' is off"),
        (({**RIGHT_STEPS, "summarize": 3},), "not a node of this graph"),
        (([1, 1, 2, 3],), "expected a dict"),
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
        ((route_ge,), "use >, not >="),
        ((route_ignores_approval,), "an approved booking goes to book"),
        ((route_key_error,), "use state.get('approved')"),
        ((route_reversed,), "below the limit"),
        ((route_bool,), "expected a str"),
    ],
}


def test_right_answers_pass():
    def keep_cheapest(current, new):
        merged = dict(current)
        for airline, price in new.items():
            merged[airline] = min(price, merged.get(airline, price))
        return merged

    def route_booking(state):
        return "request_approval" if state["fare"] > 500 and not state.get("approved") else "book"

    assert evaluate("03.1", dict(RIGHT_STEPS)).status == PASSED
    assert evaluate("03.1", {**RIGHT_STEPS, "__start__": 0}).status == PASSED
    assert evaluate("03.2", keep_cheapest).status == PASSED
    assert evaluate("03.3", route_booking).status == PASSED


def test_truth_comes_from_a_real_run():
    from helpers.checks.chapter_03 import steps_of_run

    assert steps_of_run("BER-LIS") == RIGHT_STEPS
    assert steps_of_run("BER-SYD") == {"lookup_seat": 1, "lookup_fare": 1, "quote": 2, "request_approval": 3}
