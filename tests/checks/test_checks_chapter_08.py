"""Wrong answers for chapter 08's exercises must fail with a hint (same shape as chapter 00)."""

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from helpers import durability_experiments
from helpers.checks import PASSED, evaluate
from helpers.checks.chapter_08 import SAVER_CALL_MODES, SAVER_CALL_SHAPES, saver_calls_truth
from helpers.counting_saver import CountingSaver
from helpers.durability_experiments import TripLog, make_node


# -- 08.3: realistic wrong functions ---------------------------------------------------------
def _saver_calls(steps, mode):
    if mode == "exit":
        return 1, 0
    return len(steps) + 2, 1 + sum(len(step) for step in steps)


def _per_node(steps, mode):
    """The chapter's first run read literally: one put after each node."""
    if mode == "exit":
        return 1, 0
    nodes = sum(len(step) for step in steps)
    return nodes + 2, nodes + 1


def _no_input_checkpoint(steps, mode):
    put, writes = _saver_calls(steps, mode)
    return (put - 1 if mode != "exit" else put), writes


def _forgets_start_task(steps, mode):
    put, writes = _saver_calls(steps, mode)
    return put, (writes - 1 if mode != "exit" else writes)


def _writes_per_step(steps, mode):
    put, writes = _saver_calls(steps, mode)
    return put, (len(steps) + 1 if mode != "exit" else writes)


def _exit_keeps_writes(steps, mode):
    if mode == "exit":
        return 1, sum(len(step) for step in steps) + 1
    return _saver_calls(steps, mode)


def _exit_saves_every_step(steps, mode):
    if mode == "exit":
        return len(steps) + 2, 0
    return _saver_calls(steps, mode)


def _default_is_exit(steps, mode):
    return _saver_calls(steps, "exit" if mode is None else mode)


def _async_skips_writes(steps, mode):
    put, writes = _saver_calls(steps, mode)
    return (put, 0) if mode == "async" else (put, writes)


def _changes_steps(steps, mode):
    steps.append(["extra"])
    return _saver_calls(steps[:-1], mode)


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
        ((_per_node,), "not per node"),
        ((_no_input_checkpoint,), "step -1 (the input)"),
        ((_forgets_start_task,), "__start__ hands its writes"),
        ((_writes_per_step,), "not per step"),
        ((_exit_keeps_writes,), "exit hands the saver no pending writes"),
        ((_exit_saves_every_step,), "exit saves one checkpoint"),
        ((_default_is_exit,), "default mode"),
        ((_async_skips_writes,), "sync and async make the same calls"),
        ((lambda steps, mode: "5, 4",), "expected a list or tuple"),
        ((lambda steps, mode: (5,),), "got 1 items"),
        ((lambda steps, mode: (5.0, 4.0),), "both counts are ints"),
        ((lambda steps, mode: steps[5],), "raised IndexError"),
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
    "08.3": [((lambda steps, mode: (1, 0) if mode == "exit" else (5, 4),),
              "the counts table of section 'Predict, then run: the same run in every mode'"),
             ((_per_node,),
              "the counts read aloud under the chapter's first run (one put after each of a, b and c)"),
             ((lambda steps, mode: (lambda row: (row["put"], row["put_writes"]))(
                 durability_experiments.count_saves(mode, nodes=[node for step in steps for node in step])),),
              "the saved helper durability_experiments.count_saves, run on the nodes in a line")],
    "08.4": [(({"clean": {"sync"}, "partial": {"async"}},),
              "the table 'what a crash can cost' read one mode per finding")],
}

SOLUTIONS = {
    "08.1": (_sync_outcome,),
    "08.2": ({"ticketing": "sync", "reprice": "exit", "assistant": "async", "audit": "sync"},),
    "08.3": (_saver_calls,),
    "08.4": ({"clean": ["async", "sync"], "partial": ("async",)},),
}


@pytest.mark.parametrize("exercise_id", sorted(SOLUTIONS))
def test_right_answers_pass(exercise_id):
    result = evaluate(exercise_id, *SOLUTIONS[exercise_id])
    assert result.status == PASSED, result


def test_tuples_and_lists_are_accepted():
    assert evaluate("08.1", lambda nodes, crash_at: tuple(map(tuple, _sync_outcome(nodes, crash_at)))).status == PASSED
    assert evaluate("08.3", lambda steps, mode: list(_saver_calls(steps, mode))).status == PASSED


def test_the_learner_input_is_not_what_the_check_keeps():
    assert evaluate("08.3", _changes_steps).status == PASSED
    assert evaluate("08.3", _changes_steps).status == PASSED


def _graph_of_steps(steps, checkpointer):
    """START -> steps[0] (in parallel) -> steps[1] -> ... -> END; a node waits for the whole step before it."""
    builder = StateGraph(TripLog)
    for step in steps:
        for name in step:
            builder.add_node(name, make_node(name))
    previous = [START]
    for step in steps:
        for name in step:
            builder.add_edge(previous if len(previous) > 1 else previous[0], name)
        previous = list(step)
    for name in previous:
        builder.add_edge(name, END)
    return builder.compile(checkpointer=checkpointer)


@pytest.mark.parametrize("steps", SAVER_CALL_SHAPES, ids=lambda s: "-".join("+".join(step) for step in s))
def test_saver_calls_truth_is_what_a_real_run_makes(steps):
    for mode in SAVER_CALL_MODES:
        saver = CountingSaver(InMemorySaver())
        kwargs = {} if mode is None else {"durability": mode}
        result = _graph_of_steps(steps, saver).invoke({"trip": []}, {"configurable": {"thread_id": "t"}}, **kwargs)
        assert sorted(result["trip"]) == sorted(node for step in steps for node in step)
        calls = saver.counts()
        assert (calls["put"], calls["put_writes"]) == saver_calls_truth(steps, mode), mode
