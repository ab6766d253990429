"""Checks for chapter 08 (durability modes)."""

from __future__ import annotations

from typing import Any

from .protocol import Fail, call_answer, exercise, expect_keys, expect_type

# -- 08.1: a line of nodes, durability="sync", one node crashes the process ------------------
# (line, crash node) cases the check runs; the first is the chapter's own experiment.
SYNC_CRASH_CASES = [
    (("a", "b", "c", "d"), "c"),
    (("a", "b", "c", "d", "e"), "d"),
    (("search", "hold", "charge", "confirm", "notify", "archive"), "charge"),
    (("x", "y"), "x"),
    (("fetch", "price", "book"), "book"),
]


def sync_crash_truth(nodes: tuple[str, ...], crash_at: str) -> tuple[list[int], list[str]]:
    """Steps on disk and the nodes a resume runs, after a crash in ``crash_at`` under "sync".

    Step -1 is the input, step 0 the checkpoint after ``__start__``, step k+1 the one after
    the k-th node (from 0). Sync saved every checkpoint before the next step started, so the
    latest is the one the crashing node was planned from; the resume starts at that node.
    (tests/helpers/test_durability_experiments.py checks this against real crashes.)
    """
    position = nodes.index(crash_at)
    return list(range(-1, position + 1)), list(nodes[position:])


def _as_list(value: Any, what: str) -> list:
    expect_type(value, (list, tuple), what)
    return list(value)


@exercise("08.1")
def check_sync_crash_outcome(func):
    for nodes, crash_at in SYNC_CRASH_CASES:
        case = f"nodes={list(nodes)}, crash_at={crash_at!r}"
        got = call_answer(func, list(nodes), crash_at, what="sync_crash_outcome(nodes, crash_at)", case=case)
        pair = _as_list(got, "a pair: (the steps on disk, the nodes the resume runs)")
        if len(pair) != 2:
            raise Fail(f"return a pair (steps, nodes), got {len(pair)} items for {case}")
        steps = _as_list(pair[0], "the steps on disk, e.g. [-1, 0]")
        runs = _as_list(pair[1], "the nodes invoke(None, config) runs, in order, e.g. ['a']")
        if any(isinstance(step, bool) or not isinstance(step, int) for step in steps):
            raise Fail("each step is an int, e.g. [-1, 0, 1]")
        if any(not isinstance(node, str) for node in runs):
            raise Fail("the nodes are names (strings), e.g. ['c', 'd']")
        want_steps, want_runs = sync_crash_truth(nodes, crash_at)
        position = nodes.index(crash_at)
        if steps != sorted(steps):
            raise Fail("list the steps in increasing order, from the oldest checkpoint")
        if -1 not in steps:
            raise Fail("the input checkpoint is missing: invoke writes step -1 (source 'input') before any node runs")
        if steps and steps[-1] == position + 1:
            raise Fail(f"for {case}: step {position + 1} would be the checkpoint after {crash_at!r} finished, "
                       f"but {crash_at!r} never finished: it crashed")
        if steps != want_steps:
            raise Fail(f"for {case}: one checkpoint per finished super-step: step -1 (input), step 0 (after "
                       "__start__), then one after each node that finished; sync saves each before the next step")
        if runs[:1] != [crash_at]:
            if crash_at not in runs:
                raise Fail(f"for {case}: {crash_at!r} crashed before its write was saved, so nothing of it is on "
                           "disk: the resume runs it again")
            raise Fail(f"for {case}: sync saved the checkpoint {crash_at!r} was planned from before it started: "
                       "the nodes before it do not run again")
        if runs != want_runs:
            raise Fail(f"for {case}: the resume starts at the node the latest checkpoint names in `next`, then "
                       "goes on to the end of the line")
    return (f"right for {len(SYNC_CRASH_CASES)} lines and crash points: "
            "sync repeats only the crashed node and what follows")


# -- 08.2: choose a mode per team's constraints ---------------------------------------------
MODE_CHOICES = {"ticketing": "sync", "reprice": "exit", "assistant": "async", "audit": "sync"}
MODE_HINTS = {
    "ticketing": "hold_seat must not run again after a crash in issue_ticket, so its step must be on disk "
                 "before the next node starts; which mode waits for that, and which can lose finished steps?",
    "reprice": "a crashed job is re-submitted from its input anyway and nobody reads its checkpoints: "
               "which mode writes the least per run?",
    "assistant": "forking an earlier turn needs a checkpoint per step (one mode keeps only the last one), "
                 "and the reply must not wait for the database between nodes (one mode waits)",
    "audit": "after a crash inside a node of this one-node-per-step line, every node that finished before "
             "the running one must be on disk: in one mode a crash can lose finished steps, in another the "
             "whole run",
}


@exercise("08.2")
def check_mode_choices(answer):
    expect_type(answer, dict, "team name -> 'sync', 'async' or 'exit'")
    expect_keys(answer, sorted(MODE_CHOICES), "team")
    for team in sorted(MODE_CHOICES):
        mode = answer[team]
        if mode not in ("sync", "async", "exit"):
            raise Fail(f"{team!r}: {mode!r} is not a durability mode; LangGraph would accept it silently "
                       "and behave like 'async', so spell it exactly: 'sync', 'async' or 'exit'")
    wrong = [t for t in sorted(MODE_CHOICES) if answer[t] != MODE_CHOICES[t]]
    if wrong:
        verb = "is" if len(wrong) == 1 else "are"
        raise Fail(f"{len(wrong)} of {len(MODE_CHOICES)} {verb} off; {wrong[0]}: {MODE_HINTS[wrong[0]]}")
    return "each team's constraints matched to what its mode writes, and what a crash costs in it"


# -- 08.3: saver calls for a graph of any shape ---------------------------------------------
# Graphs that run to their end, as lists of super-steps (the nodes of each step); the first
# is the chapter's line. tests/checks/test_checks_chapter_08.py runs each on a counting saver.
SAVER_CALL_SHAPES = [
    (("a",), ("b",), ("c",)),
    (("seat", "fare", "bags"), ("price",)),
    (("search",), ("hold_seat", "quote_fare"), ("charge_card",)),
    (("only",),),
    (("search",), ("hold", "quote"), ("charge",), ("ticket", "email", "notify")),
    (("a",), ("b",), ("c",), ("d",), ("e",), ("f",)),
]
SAVER_CALL_MODES = ("sync", "async", "exit", None)


def saver_calls_truth(steps, mode) -> tuple[int, int]:
    """(put, put_writes) of one invoke that runs ``steps`` to the end with ``durability=mode``.

    "sync", "async" and the default (None, i.e. "async") save one checkpoint for the input
    (step -1), one after ``__start__`` (step 0) and one per super-step, and hand the saver
    one put_writes per task (``__start__`` and every node); "exit" saves only the final
    checkpoint, and a finished run has no pending writes.
    """
    if mode == "exit":
        return 1, 0
    return len(steps) + 2, 1 + sum(len(step) for step in steps)


def _saver_calls_hint(steps, mode, put, put_writes) -> str:
    want_put, want_writes = saver_calls_truth(steps, mode)
    nodes = sum(len(step) for step in steps)
    case = f"steps={[list(s) for s in steps]}, mode={mode!r}"
    if mode is None:
        return (f"for {case}: passing no durability runs the default mode, which the docstring in the first "
                "prediction's cell names")
    if mode == "exit":
        if put != 1:
            return f"for {case}: exit saves one checkpoint, when the run ends"
        return (f"for {case}: exit hands the saver no pending writes during the run, and a run that finished "
                "leaves none at its end")
    if put != want_put:
        if put == nodes + 2 and nodes != len(steps):
            return (f"for {case}: one checkpoint per super-step, not per node: nodes that run in parallel "
                    "share one step, and one checkpoint after it (chapter 03)")
        return (f"for {case}: one put per checkpoint: step -1 (the input), step 0 (after __start__), then one "
                "after each super-step")
    if put_writes == nodes:
        return f"for {case}: the input task __start__ hands its writes to the saver too"
    if put_writes == len(steps) + 1 and nodes != len(steps):
        return (f"for {case}: one put_writes per task, not per step: each parallel node hands its own writes "
                "over when it finishes")
    return f"for {case}: one put_writes per task: __start__, then every node"


@exercise("08.3")
def check_saver_calls(func):
    answers = {}
    for steps in SAVER_CALL_SHAPES:
        for mode in SAVER_CALL_MODES:
            case = f"steps={[list(s) for s in steps]}, mode={mode!r}"
            got = call_answer(func, [list(step) for step in steps], mode, what="saver_calls(steps, mode)",
                              case=case)
            pair = _as_list(got, "a pair: (put calls, put_writes calls)")
            if len(pair) != 2:
                raise Fail(f"return a pair (put, put_writes), got {len(pair)} items for {case}")
            if any(isinstance(n, bool) or not isinstance(n, int) for n in pair):
                raise Fail(f"both counts are ints, e.g. (5, 4); got {tuple(pair)!r} for {case}")
            answers[steps, mode] = tuple(pair)
    for steps in SAVER_CALL_SHAPES:
        if answers[steps, "sync"] != answers[steps, "async"]:
            raise Fail(f"steps={[list(s) for s in steps]}: sync and async make the same calls; they differ only "
                       "in when the saves happen")
    for steps in SAVER_CALL_SHAPES:
        for mode in SAVER_CALL_MODES:
            if answers[steps, mode] != saver_calls_truth(steps, mode):
                raise Fail(_saver_calls_hint(steps, mode, *answers[steps, mode]))
    return (f"right for {len(SAVER_CALL_SHAPES)} shapes in every mode: one checkpoint per super-step, "
            "one put_writes per task, and exit only the final checkpoint")


# -- 08.4: which modes could have left each finding after a crash ----------------------------
# A -> b -> c -> d -> e on SqliteSaver, node d kills its process (it logs its call first, as c does in the
# chapter), then the file is recovered as in the crash lab. Step -1 is the input, step 0 the checkpoint after
# __start__, step k+1 the one after the k-th node, so d is planned from step 3 and sync keeps steps -1..3.
# What decides each answer, in langgraph/pregel of the pinned version:
# - main.py, Pregel.stream: `if durability_ == "sync": loop._put_checkpoint_fut.result()` after every step,
#   so under sync steps -1..3 are stored before d starts;
# - _loop.py, _put_checkpoint: checkpoints go to `_checkpointer_put_after_previous`, which waits for the
#   previous save, so async's file holds a prefix of -1..3; no checkpoint in exit mode until the run ends
#   (`do_checkpoint = ... exiting or self.durability != "exit"`), and a crash ends nothing;
# - _loop.py, put_writes: a task's write goes to the saver in the background (`self.durability != "exit"`),
#   naming `self.checkpoint["id"]`, the checkpoint the task was planned from, and nothing orders it with
#   that checkpoint's save; exit hands the saver no write during the run;
# - _algo.py, prepare_single_task: a task's id hashes its checkpoint's id, so d's id comes back exactly when
#   step 3 is on disk, and a write under a checkpoint that is not on disk is never read again.
FINDINGS = ("hanoi", "oslo", "quito", "lisbon", "dakar")  # in the order the exercise lists them
POSSIBLE_MODES = {
    "hanoi": {"async", "exit"},  # no checkpoint, no write; the resume raises EmptyInputError
    "oslo": {"async"},  # steps -1..2 with c's write on step 2; recovery d, e; d under a new task id
    "quito": set(),  # steps -1..3, no pending write; recovery d, e; d under a new task id
    "lisbon": set(),  # steps -1..4; recovery e
    "dakar": {"async"},  # steps -1..1 with b's write, c's write naming the absent step 2; recovery c, d, e
}
DURABILITY_MODES = ("sync", "async", "exit")
_EXIT_HINT = ("this file holds checkpoints or writes: reconsider when exit hands the saver anything, and what a "
              "crash leaves of it (sections '\"exit\" when a run fails or pauses' and 'Real crashes')")
# (finding, mode put in the set that cannot leave it), or (finding, None): a mode that can was left out;
# "*" for a finding no mode can leave.
POSSIBLE_MODES_HINTS = {
    ("hanoi", "sync"): "an empty file, yet a, b, c and d ran: reconsider what sync waits for before the next "
                       "step starts (the table at the top of the chapter)",
    ("hanoi", None): "a mode you left out can leave an empty file too: reread the table 'what a crash can cost' "
                     "row by row, and the workers whose timing was fixed by hand (section 'Real crashes')",
    ("oslo", "sync"): "the recovery runs what sync's would, but compare the file with what sync has on disk "
                      "while d runs (exercise 08.1, on this line)",
    ("oslo", "exit"): _EXIT_HINT,
    ("oslo", None): "a mode you left out can leave this file: reread the race under 'Real crashes', where a "
                    "pending write saves a node between the steps on disk and the crash",
    ("quito", "*"): "reconsider the last law under 'Real crashes' (when does the crashed node get its task ID "
                    "back?) and the checkpoint d was planned from",
    ("lisbon", "*"): "compare the steps with what sync keeps for a crash in d (exercise 08.1), then reread the "
                     "laws under 'Real crashes': what did the disk hold at most, in every worker?",
    ("dakar", "sync"): "c's write names a checkpoint the file lacks: reread 'A saved write needs its checkpoint' "
                       "(when does each mode store the checkpoint a task was planned from?)",
    ("dakar", "exit"): _EXIT_HINT,
    ("dakar", None): "a mode you left out can leave a write whose checkpoint is not in the file: reread "
                     "'A saved write needs its checkpoint'",
}


def _possible_modes_hint(finding: str, modes: set[str]) -> str:
    """What to reconsider for a wrong set: the first mode that cannot leave the finding, else a missing one."""
    want = POSSIBLE_MODES[finding]
    extra = [mode for mode in DURABILITY_MODES if mode in modes and mode not in want]
    if extra:
        hint = POSSIBLE_MODES_HINTS.get((finding, "*")) or POSSIBLE_MODES_HINTS[finding, extra[0]]
    else:
        hint = POSSIBLE_MODES_HINTS[finding, None]
    return f"{finding!r}: {hint}"


@exercise("08.4")
def check_possible_modes(answer):
    expect_type(answer, dict, f"a dict: finding ({', '.join(map(repr, FINDINGS))}) -> the set of modes "
                              "that could have left it")
    unknown = [key for key in answer if key not in POSSIBLE_MODES]
    if unknown:
        raise Fail(f"{unknown[0]!r} is not one of this exercise's findings; the dict needs the keys {list(FINDINGS)}")
    expect_keys(answer, FINDINGS, "finding")
    given = {}
    for finding in FINDINGS:
        expect_type(answer[finding], (set, frozenset, list, tuple),
                    f"the modes that could have left {finding!r}, e.g. {{'sync'}}, or set() for none")
        modes = set(answer[finding])
        unknown_modes = sorted(map(repr, (m for m in modes if m not in DURABILITY_MODES)))
        if unknown_modes:
            raise Fail(f"{finding!r}: {', '.join(unknown_modes)} is not a durability mode; choose from 'sync', "
                       "'async', 'exit'")
        given[finding] = modes
    wrong = [finding for finding in FINDINGS if given[finding] != POSSIBLE_MODES[finding]]
    if wrong:
        verb = "is" if len(wrong) == 1 else "are"
        hint = _possible_modes_hint(wrong[0], given[wrong[0]])
        raise Fail(f"{len(wrong)} of {len(FINDINGS)} findings {verb} off; {hint}")
    return ("every finding read against the laws: sync keeps the steps through the one the crashed node was planned "
            "from, async a prefix of them with writes that count only under their checkpoint, exit nothing; and no "
            "file holds more than sync keeps")
