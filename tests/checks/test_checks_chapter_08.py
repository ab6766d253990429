"""Wrong answers for chapter 08's exercises must fail with a hint (same shape as chapter 00)."""

import statistics

import pytest

from helpers.checks import NOT_ATTEMPTED, PASSED, evaluate


def _mean_ratios(samples):
    means = {m: statistics.mean(v) for m, v in samples.items()}
    return {m: round(v / means["sync"], 2) for m, v in means.items()}


def _inverted(samples):
    medians = {m: statistics.median(v) for m, v in samples.items()}
    return {m: round(medians["sync"] / v, 2) for m, v in medians.items()}


def _upper_middle(samples):
    mids = {m: sorted(v)[len(v) // 2] for m, v in samples.items()}
    return {m: round(v / mids["sync"], 2) for m, v in mids.items()}


def _without_sync(samples):
    medians = {m: statistics.median(v) for m, v in samples.items()}
    return {m: v / medians["sync"] for m, v in medians.items() if m != "sync"}


def _raises(samples):
    return 1 / 0


WRONG_ANSWERS = {
    "08.1": [
        (([0, 1, 2, 3], ["d", "e"]), "input checkpoint"),
        (([-1, 0, 1, 2, 3, 4], ["d", "e"]), "d never finished"),
        (([-1, 0, 1, 2], ["d", "e"]), "one checkpoint per finished super-step"),
        (([-1, 0, 1, 2, 3], ["e"]), "runs d again"),
        (([-1, 0, 1, 2, 3], ["a", "b", "c", "d", "e"]), "do not run again"),
        (([3, 2, 1, 0, -1], ["d", "e"]), "increasing order"),
        (("-1,0,1,2,3", ["d", "e"]), "expected a list or tuple"),
    ],
    "08.2": [
        (({"booking": "sync", "reprice": "sync", "chat": "sync"},), "2 of 3 are off; chat"),
        (({"booking": "async", "reprice": "exit", "chat": "async"},), "booking"),
        (({"booking": "sync", "reprice": "exit", "chat": "exit"},), "chat"),
        (({"booking": "Sync", "reprice": "exit", "chat": "async"},), "not a durability mode"),
        (({"booking": "sync", "reprice": "exit"},), "missing scenario"),
        ((["sync", "exit", "async"],), "expected a dict"),
    ],
    "08.3": [
        ((_mean_ratios,), "use the median"),
        ((_inverted,), "upside down"),
        ((_upper_middle,), "two middle values"),
        ((_without_sync,), "sync included"),
        ((lambda samples: [1.0, 1.14, 0.37],), "expected a dict"),
        ((lambda samples: {m: "1.0" for m in samples},), "should be a number"),
        ((_raises,), "raised ZeroDivisionError"),
        ((42,), "expected a function"),
    ],
    "08.4": [
        (({"exit"},), "async fits too"),
        (({"async"},), "exit saves nothing"),
        (({"sync", "async", "exit"},), "sync waits"),
        (({"async", "exit", "fast"},), "not a durability mode"),
        (("exit",), "expected a set"),
    ],
}

SOLUTIONS = {
    "08.1": ([-1, 0, 1, 2, 3], ["d", "e"]),
    "08.2": ({"booking": "sync", "reprice": "exit", "chat": "async"},),
    "08.3": (lambda samples: {m: round(statistics.median(v) / statistics.median(samples["sync"]), 2)
                              for m, v in samples.items()},),
    "08.4": (["exit", "async"],),
}


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_right_answers_pass(exercise_id):
    result = evaluate(exercise_id, *SOLUTIONS[exercise_id])
    assert result.status == PASSED, result


def test_unrounded_ratios_and_tuples_are_accepted():
    assert evaluate("08.1", (-1, 0, 1, 2, 3), ("d", "e")).status == PASSED
    exact = lambda s: {m: statistics.median(v) / statistics.median(s["sync"]) for m, v in s.items()}  # noqa: E731
    assert evaluate("08.3", exact).status == PASSED


def test_the_learner_input_is_not_what_the_check_keeps():
    def sorts_in_place(samples):
        for values in samples.values():
            values.sort()
        return SOLUTIONS["08.3"][0](samples)

    assert evaluate("08.3", sorts_in_place).status == PASSED
    assert evaluate("08.3", sorts_in_place).status == PASSED
