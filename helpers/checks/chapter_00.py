"""Checks for chapter 00 (start here)."""

from __future__ import annotations

from typing import Any

from .protocol import Fail, exercise, expect_keys, expect_type

KINDS = ("time", "steps", "failure")
EXPECTED_KINDS = {"laptop": "failure", "visa": "time", "refund": "time", "itinerary": "steps"}
KIND_HINTS = {
    "visa": "the visa case waits days for an outside answer: that is a long time span",
    "refund": "the refund case waits up to two weeks for another system's answer: that is a long time span "
              "(a kind can fit more than one scenario)",
    "itinerary": "the itinerary case runs many nodes in one go: that is many steps",
    "laptop": "the laptop case is about the process going away mid-task: that is a failure window",
}


@exercise("00.1")
def check_long_task_kinds(answer: Any) -> str:
    expect_type(answer, dict, "scenario name -> 'time', 'steps' or 'failure'")
    expect_keys(answer, sorted(EXPECTED_KINDS), "scenario")
    for scenario, kind in sorted(answer.items()):
        if kind not in KINDS:
            raise Fail(f"{scenario!r}: {kind!r} is not one of {list(KINDS)}")
    wrong = [s for s in sorted(EXPECTED_KINDS) if answer[s] != EXPECTED_KINDS[s]]
    if wrong:
        verb = "is" if len(wrong) == 1 else "are"
        raise Fail(f"{len(wrong)} of {len(EXPECTED_KINDS)} {verb} off; hint: {KIND_HINTS[wrong[0]]}")
    return "all three kinds of 'long' recognised"
