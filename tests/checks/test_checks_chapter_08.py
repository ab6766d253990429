"""Wrong answers for chapter 08's exercises must fail with a hint (same shape as chapter 00)."""

import statistics

import pytest

from helpers.checks import PASSED, evaluate


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


# -- 08.1: realistic wrong functions ---------------------------------------------------------
def _sync_outcome(nodes, crash_at):
    position = list(nodes).index(crash_at)
    return list(range(-1, position + 1)), list(nodes[position:])


def _no_input_step(nodes, crash_at):
    steps, runs = _sync_outcome(nodes, crash_at)
    return steps[1:], runs


def _counts_the_crashed_node(nodes, crash_at):
    steps, runs = _sync_outcome(nodes, crash_at)
    return steps + [steps[-1] + 1], runs


def _one_step_short(nodes, crash_at):
    steps, runs = _sync_outcome(nodes, crash_at)
    return steps[:-1], runs


def _skips_the_crashed_node(nodes, crash_at):
    steps, runs = _sync_outcome(nodes, crash_at)
    return steps, runs[1:]


def _reruns_everything(nodes, crash_at):
    steps, _ = _sync_outcome(nodes, crash_at)
    return steps, list(nodes)


def _newest_first(nodes, crash_at):
    steps, runs = _sync_outcome(nodes, crash_at)
    return steps[::-1], runs


def _only_the_chapters_line(nodes, crash_at):
    return [-1, 0, 1, 2], ["c", "d"]


def _stops_at_the_crash(nodes, crash_at):
    steps, _ = _sync_outcome(nodes, crash_at)
    return steps, [crash_at]


WRONG_ANSWERS = {
    "08.1": [
        ((_no_input_step,), "input checkpoint"),
        ((_counts_the_crashed_node,), "never finished"),
        ((_one_step_short,), "one checkpoint per finished super-step"),
        ((_skips_the_crashed_node,), "runs it again"),
        ((_reruns_everything,), "do not run again"),
        ((_newest_first,), "increasing order"),
        ((_only_the_chapters_line,), "one checkpoint per finished super-step"),
        ((_stops_at_the_crash,), "goes on to the end"),
        ((lambda nodes, crash_at: "-1,0,1,2",), "expected a list or tuple"),
        ((lambda nodes, crash_at: nodes.index("zz"),), "raised ValueError"),
    ],
    "08.2": [
        (({"ticketing": "sync", "reprice": "sync", "assistant": "sync", "audit": "sync"},),
         "2 of 4 are off; assistant"),
        (({"ticketing": "async", "reprice": "exit", "assistant": "async", "audit": "sync"},),
         "1 of 4 is off; ticketing"),
        (({"ticketing": "sync", "reprice": "exit", "assistant": "exit", "audit": "sync"},), "one mode keeps only"),
        (({"ticketing": "sync", "reprice": "exit", "assistant": "async", "audit": "async"},), "audit"),
        (({"ticketing": "sync", "reprice": "async", "assistant": "async", "audit": "sync"},), "writes the least"),
        (({"ticketing": "Sync", "reprice": "exit", "assistant": "async", "audit": "sync"},), "not a durability mode"),
        (({"ticketing": "sync", "reprice": "exit", "assistant": "async"},), "missing team"),
        ((["sync", "exit", "async", "sync"],), "expected a dict"),
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
        (({"clean": {"sync"}, "partial": {"async"}},), "async fits too"),
        (({"clean": {"sync", "async"}, "partial": {"async", "exit"}},), "exit saves nothing"),
        (({"clean": {"sync", "async", "exit"}, "partial": {"async"}},), "exit saves nothing"),
        (({"clean": {"sync", "async"}, "partial": {"sync", "async"}},), "sync waits"),
        (({"clean": {"sync", "async"}, "partial": set()},), "which?"),
        (({"clean": {"async"}, "partial": {"async"}},), "exactly what sync leaves"),
        (({"clean": {"sync", "async"}, "partial": {"async", "fast"}},), "not a durability mode"),
        (({"clean": {"sync", "async"}},), "missing finding"),
        (({"clean": "sync", "partial": {"async"}},), "expected a set"),
        (({"sync", "async"},), "expected a dict"),
    ],
}


# what a learner gets by pasting the nearest visible cell (or reading a visible table) into the exercise cell
COPY_ATTACKS = {
    "08.1": [((lambda nodes, crash_at: ([-1, 0, 1, 2], ["c", "d"]),),
              "the sync row of the table in section 'Real crashes'")],
    "08.2": [(({"ticketing": "sync", "reprice": "exit", "assistant": "sync", "audit": "sync"},),
              "every team whose text mentions a crash matched to the sync row of the table 'what a crash can cost'"),
             (({"ticketing": "sync", "reprice": "exit", "assistant": "async", "audit": "async"},),
              "'a crash may lose the last steps' read as async for every long flow")],
    "08.3": [((lambda samples: {m: round(statistics.median(v), 2) for m, v in samples.items()},),
              "the medians cell of section 'What each mode costs' (medians, not ratios)")],
    "08.4": [(({"clean": {"sync"}, "partial": {"async"}},),
              "the table 'what a crash can cost' read one mode per finding")],
}

SOLUTIONS = {
    "08.1": (_sync_outcome,),
    "08.2": ({"ticketing": "sync", "reprice": "exit", "assistant": "async", "audit": "sync"},),
    "08.3": (lambda samples: {m: round(statistics.median(v) / statistics.median(samples["sync"]), 2)
                              for m, v in samples.items()},),
    "08.4": ({"clean": ["async", "sync"], "partial": ("async",)},),
}


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_right_answers_pass(exercise_id):
    result = evaluate(exercise_id, *SOLUTIONS[exercise_id])
    assert result.status == PASSED, result


def test_unrounded_ratios_and_tuples_are_accepted():
    assert evaluate("08.1", lambda nodes, crash_at: tuple(map(tuple, _sync_outcome(nodes, crash_at)))).status == PASSED
    exact = lambda s: {m: statistics.median(v) / statistics.median(s["sync"]) for m, v in s.items()}  # noqa: E731
    assert evaluate("08.3", exact).status == PASSED


def test_the_learner_input_is_not_what_the_check_keeps():
    def sorts_in_place(samples):
        for values in samples.values():
            values.sort()
        return SOLUTIONS["08.3"][0](samples)

    assert evaluate("08.3", sorts_in_place).status == PASSED
    assert evaluate("08.3", sorts_in_place).status == PASSED
