"""Wrong answers for chapter 08's exercises must fail with a hint (same shape as chapter 00)."""

import re
import threading

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import EmptyInputError
from langgraph.graph import END, START, StateGraph

from helpers import durability_experiments
from helpers.checks import PASSED, evaluate
from helpers.checks.chapter_08 import (
    POSSIBLE_MODES,
    POSSIBLE_MODES_HINTS,
    SAVER_CALL_MODES,
    SAVER_CALL_SHAPES,
    saver_calls_truth,
)
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


# 08.4: the right sets, written out rather than imported from the check (decided in helpers/checks/chapter_08.py)
_POSSIBLE = {"hanoi": {"async", "exit"}, "oslo": {"async"}, "quito": set(), "lisbon": set(), "dakar": {"async"}}


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
        (({**_POSSIBLE, "hanoi": {"sync", "async", "exit"}},), "what sync waits for"),
        (({**_POSSIBLE, "hanoi": {"exit"}},), "'hanoi': a mode you left out"),
        (({**_POSSIBLE, "oslo": {"sync", "async"}},), "compare the file with what sync has on disk"),
        (({**_POSSIBLE, "oslo": {"async", "exit"}},), "'oslo': this file holds checkpoints or writes"),
        (({**_POSSIBLE, "oslo": set()},), "'oslo': a mode you left out"),
        (({**_POSSIBLE, "quito": {"sync", "async"}},), "task ID back"),
        (({**_POSSIBLE, "lisbon": {"sync"}},), "what did the disk hold at most"),
        (({**_POSSIBLE, "dakar": {"sync", "async"}},), "names a checkpoint the file lacks"),
        (({**_POSSIBLE, "dakar": {"async", "exit"}},), "'dakar': this file holds checkpoints or writes"),
        (({**_POSSIBLE, "dakar": set()},), "'dakar': a mode you left out"),
        (({**_POSSIBLE, "quito": {"sync"}, "lisbon": {"sync"}},), "2 of 5 findings are off; 'quito'"),
        (({**_POSSIBLE, "oslo": {"async", "Sync"}},), "not a durability mode"),
        (({**_POSSIBLE, "clean": {"sync", "async"}},), "not one of this exercise's findings"),
        (({k: v for k, v in _POSSIBLE.items() if k != "dakar"},), "missing finding"),
        (({**_POSSIBLE, "oslo": "async"},), "expected a set"),
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
    "08.4": [(({"hanoi": {"exit"}, "oslo": {"async"}, "quito": {"sync"}, "lisbon": {"sync"}, "dakar": {"async"}},),
              "the table 'what a crash can cost' read one mode per finding (nothing left: exit; finished steps "
              "lost: async; only the running step lost: sync)"),
             (({"clean": {"sync", "async"}, "partial": {"async"}},),
              "the old answer of this exercise (findings 'clean' and 'partial'), from the notes on the async rows"),
             (({"hanoi": {"exit"}, "oslo": {"async"}, "quito": {"sync", "async"}, "lisbon": {"sync", "async"},
                "dakar": {"async"}},),
              "the old answer's reasoning carried over: every file with sync's steps or more is 'clean' (sync or "
              "async), a half-saved one async, an empty one exit")],
}

SOLUTIONS = {
    "08.1": (_sync_outcome,),
    "08.2": ({"ticketing": "sync", "reprice": "exit", "assistant": "async", "audit": "sync"},),
    "08.3": (_saver_calls,),
    "08.4": ({**_POSSIBLE, "hanoi": ["exit", "async"], "oslo": ("async",), "quito": []},),
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


def test_no_possible_modes_hint_names_its_answer():
    """08.4's hints say what to reconsider: none names a mode of its finding's answer, or says 'no mode'."""
    for (finding, _), hint in POSSIBLE_MODES_HINTS.items():
        named = [mode for mode in POSSIBLE_MODES[finding] if re.search(rf"(?<![a-z]){mode}(?![a-z])", hint)]
        assert not named, (finding, named, hint)
        assert "set()" not in hint and "no mode" not in hint, (finding, hint)


class _DiesInD(InMemorySaver):
    """A saver for a process that dies inside node d: the puts of ``late_steps`` (and every write, with
    ``late_writes``) wait until it has died, and nothing reaches it after that (an in-process stand-in
    for the chapter's os._exit, with events instead of timing)."""

    def __init__(self, late_steps=(), late_writes=False):
        super().__init__()
        self.late_steps, self.late_writes = set(late_steps), late_writes
        self.dead = threading.Event()
        self.stored = threading.Condition()
        self.steps_stored, self.writes_stored = set(), set()  # checkpoint steps; node names of the writes

    def put(self, config, checkpoint, metadata, new_versions):
        if metadata["step"] in self.late_steps:
            self.dead.wait(10)
        if self.dead.is_set():
            return config
        stored = super().put(config, checkpoint, metadata, new_versions)
        with self.stored:
            self.steps_stored.add(metadata["step"])
            self.stored.notify_all()
        return stored

    def put_writes(self, config, writes, task_id, task_path=""):
        if self.late_writes:
            self.dead.wait(10)
        if self.dead.is_set():
            return
        super().put_writes(config, writes, task_id, task_path)
        with self.stored:
            self.writes_stored.add(task_path.split(", ")[-1])
            self.stored.notify_all()

    def wait_for(self, steps, writes):
        with self.stored:
            assert self.stored.wait_for(lambda: set(steps) <= self.steps_stored and set(writes) <= self.writes_stored,
                                        timeout=10)


# finding -> (late steps, late writes, what d waits for before it dies: steps, writes; what the file and the
# recovery show: steps on disk, the nodes of the latest checkpoint's pending writes, the nodes whose write names
# a checkpoint that is not on disk, the nodes the recovery runs, whether d got its task id back)
_ASYNC_CRASHES = {
    "hanoi": ((-1, 0, 1, 2, 3), True, (), (), [], [], [], None, None),
    "oslo": ((3,), False, (2,), ("c",), [-1, 0, 1, 2], ["c"], [], ["d", "e"], False),
    "dakar": ((2, 3), False, (1,), ("b", "c"), [-1, 0, 1], ["b"], ["c"], ["c", "d", "e"], False),
}


@pytest.mark.parametrize("finding", sorted(_ASYNC_CRASHES))
def test_async_can_leave_the_finding(finding, tmp_path):
    """08.4: the findings whose answer holds async are states an async run really leaves, with events fixing
    the timing (tests the check's reading of the pinned source, not only the chapter's outputs)."""
    late, late_writes, wait_steps, wait_writes, steps, pending, orphans, recovery, same_id = _ASYNC_CRASHES[finding]
    assert "async" in POSSIBLE_MODES[finding]
    nodes, log = ["a", "b", "c", "d", "e"], tmp_path / "runs.log"
    saver = _DiesInD(late, late_writes)

    def d(state, runtime):
        with log.open("a") as runs:
            runs.write(f"d {runtime.execution_info.task_id}\n")
        saver.wait_for(wait_steps, wait_writes)
        saver.dead.set()  # the process is gone: nothing more reaches the saver
        raise RuntimeError("d crashed")

    builder = StateGraph(TripLog)
    for name in nodes:
        builder.add_node(name, d if name == "d" else make_node(name, log_path=str(log)))
    for left, right in zip([START, *nodes], [*nodes, END], strict=True):
        builder.add_edge(left, right)
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(RuntimeError, match="d crashed"):
        builder.compile(checkpointer=saver).invoke({"trip": []}, config, durability="async")
    before = dict(line.split() for line in log.read_text().splitlines())
    assert list(before) == ["a", "b", "c", "d"]
    names = {task_id: name for name, task_id in before.items()}

    on_disk = {t.checkpoint["id"] for t in saver.list(config)}
    assert sorted(t.metadata["step"] for t in saver.list(config)) == steps
    latest = saver.get_tuple(config)
    assert sorted({names.get(task_id, task_id) for task_id, _, _ in latest.pending_writes} if latest else []) == pending
    assert sorted({names.get(task_id, task_id) for (_, _, checkpoint_id), writes in saver.writes.items()
                   if checkpoint_id not in on_disk for task_id, *_ in writes.values()}) == orphans

    saver.late_steps, saver.late_writes = set(), False
    saver.dead.clear()
    log.write_text("")
    graph = durability_experiments.linear_graph(saver, nodes, log_path=str(log))
    if recovery is None:
        with pytest.raises(EmptyInputError):
            graph.invoke(None, config)
        assert graph.invoke({"trip": []}, config)["trip"] == nodes
        return
    assert graph.invoke(None, config)["trip"] == nodes
    after = dict(line.split() for line in log.read_text().splitlines())
    assert list(after) == recovery
    assert (after["d"] == before["d"]) is same_id
