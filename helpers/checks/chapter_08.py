"""Checks for chapter 08 (durability modes)."""

from __future__ import annotations

import statistics
from typing import Any

from .protocol import Fail, call_answer, exercise, expect_type

# -- 08.1: a → b → c → d → e, node d crashes the process, durability="sync" -----------------
SYNC_CRASH_STEPS = [-1, 0, 1, 2, 3]
SYNC_CRASH_RESUME = ["d", "e"]


def _as_list(value: Any, what: str) -> list:
    expect_type(value, (list, tuple), what)
    return list(value)


@exercise("08.1")
def sync_crash_survivors(saved_steps, resume_runs):
    steps = _as_list(saved_steps, "the steps on disk, e.g. [-1, 0]")
    runs = _as_list(resume_runs, "the nodes invoke(None, config) runs, in order, e.g. ['a']")
    for step in steps:
        expect_type(step, int, "each step is an int")
    if sorted(steps) != steps:
        raise Fail("list the steps in increasing order, from the oldest checkpoint")
    if -1 not in steps:
        raise Fail("the input checkpoint is missing: invoke writes step -1 (source 'input') before any node runs")
    if 4 in steps:
        raise Fail("step 4 would be the checkpoint after d finished, but d never finished: it crashed")
    if steps != SYNC_CRASH_STEPS:
        raise Fail("one checkpoint per finished super-step: step -1 (input), step 0 (after __start__), "
                   "then one after each of a, b, c; sync saves each before the next step starts")
    if any(not isinstance(n, str) for n in runs):
        raise Fail("resume_runs holds node names as strings, e.g. ['a', 'b']")
    if runs[:1] == ["e"]:
        raise Fail("d crashed before its write was saved, so nothing of d is on disk: the resume runs d again")
    if any(n in ("a", "b", "c") for n in runs):
        raise Fail("sync saved the checkpoint after c before d started: a, b and c do not run again")
    if runs != SYNC_CRASH_RESUME:
        raise Fail("the resume starts at the node the latest checkpoint names in `next`, then goes on to the end")
    return "sync kept every finished step; only the crashed node and what follows run again"


# -- 08.2: choose a mode per requirement ----------------------------------------------------
MODE_CHOICES = {"booking": "sync", "reprice": "exit", "chat": "async"}
MODE_HINTS = {
    "booking": "the booking flow must have every finished step on disk before the next one starts: "
               "only one mode waits for the save",
    "reprice": "the re-pricing job restarts from its input after a crash and wants the fewest writes: "
               "which mode writes one checkpoint per run?",
    "chat": "the chat path wants per-step history and error resume without waiting for each write, "
            "and accepts losing the last steps in a rare crash",
}


@exercise("08.2")
def choose_modes(answer):
    expect_type(answer, dict, "scenario name -> 'sync', 'async' or 'exit'")
    missing = sorted(set(MODE_CHOICES) - set(answer))
    if missing:
        raise Fail(f"missing scenario(s) {missing}; the dict needs the keys {sorted(MODE_CHOICES)}")
    for scenario in sorted(MODE_CHOICES):
        mode = answer[scenario]
        if mode not in ("sync", "async", "exit"):
            raise Fail(f"{scenario!r}: {mode!r} is not a durability mode; LangGraph would accept it silently "
                       "and behave like 'async', so spell it exactly: 'sync', 'async' or 'exit'")
    wrong = [s for s in sorted(MODE_CHOICES) if answer[s] != MODE_CHOICES[s]]
    if wrong:
        raise Fail(f"{len(wrong)} of 3 are off; {wrong[0]}: {MODE_HINTS[wrong[0]]}")
    return "each requirement matched to the mode whose save timing fits it"


# -- 08.3: ratios to sync from measurements -------------------------------------------------
HIDDEN_SAMPLES = [
    {"sync": [3.1, 3.3, 3.2, 9.8], "async": [3.9, 3.6, 3.7, 3.5, 30.0], "exit": [1.2, 1.1, 1.3]},
    {"exit": [0.9, 1.0, 5.0], "async": [2.0, 2.4, 2.2], "sync": [2.0, 2.1, 1.9, 2.0, 2.2, 2.6]},
]
TOLERANCE = 0.006


def _ratios(samples, center) -> dict[str, float]:
    centers = {mode: center(values) for mode, values in samples.items()}
    return {mode: value / centers["sync"] for mode, value in centers.items()}


def _upper_middle(values):
    return sorted(values)[len(values) // 2]


def _close(got, expected) -> bool:
    return all(abs(got[m] - expected[m]) <= TOLERANCE for m in expected)


@exercise("08.3")
def ratios_to_sync(func):
    for samples in HIDDEN_SAMPLES:
        copy = {mode: list(values) for mode, values in samples.items()}
        got = call_answer(func, copy, what="ratios_to_sync(samples)")
        expect_type(got, dict, "mode -> ratio of its median to sync's median")
        missing = sorted(set(samples) - set(got))
        if missing:
            raise Fail(f"no ratio for {missing}: return one for every mode in samples, sync included (1.0)")
        for mode in sorted(samples):
            if isinstance(got[mode], bool) or not isinstance(got[mode], (int, float)):
                raise Fail(f"the ratio for {mode!r} should be a number, got {type(got[mode]).__name__}")
        expected = _ratios(samples, statistics.median)
        if _close(got, expected):
            continue
        if got["exit"] > 1 and _close(got, {m: 1 / r for m, r in expected.items()}):
            raise Fail("your ratios are upside down: divide each mode's median by sync's median (mode / sync)")
        if _close(got, _ratios(samples, statistics.mean)):
            raise Fail("that is the mean: use the median (statistics.median); one slow outlier moves the mean a lot")
        if _close(got, _ratios(samples, _upper_middle)):
            raise Fail("with an even number of runs the median is the mean of the two middle values: "
                       "use statistics.median instead of indexing the sorted list")
        shown = {m: got[m] for m in sorted(got)}
        raise Fail(f"for samples {samples} expected about {({m: round(expected[m], 2) for m in sorted(expected)})}, "
                   f"got {shown}; ratio = median(mode) / median(sync), rounded to 2 decimals")
    return "medians and ratios to sync computed as the chapter does"


# -- 08.4: which modes fit what was found after a crash --------------------------------------
CONSISTENT_WITH_EMPTY_FILE = {"async", "exit"}


@exercise("08.4")
def diagnose_empty_file(answer):
    expect_type(answer, (set, frozenset, list, tuple), "the set of modes that could explain the file")
    modes = set(answer)
    unknown = sorted(m for m in modes if m not in ("sync", "async", "exit"))
    if unknown:
        raise Fail(f"{unknown} is not a durability mode; choose from 'sync', 'async', 'exit'")
    if "sync" in modes:
        raise Fail("sync waits for every save before the next step: a, b and c ran, so steps -1 to 2 "
                   "would be on disk")
    if "exit" not in modes:
        raise Fail("exit saves nothing until the run ends, and a crash ends nothing cleanly: it fits")
    if "async" not in modes:
        raise Fail("async fits too: its saves run on a background thread, and with a slow saver the crash can "
                   "come before even the input checkpoint is written (the async row above shows no kept steps)")
    return "an empty file after a crash points to exit or async; sync would have kept the finished steps"
