"""Wrong answers for chapter 12's exercises must fail with a hint; right ones must pass.

Same shape as tests/checks/test_checks_chapter_00.py: ``WRONG_ANSWERS`` maps an exercise id to
``(args, hint)`` cases, where ``args`` is the tuple passed to the check and ``hint`` a
substring the failure message must contain. ``COPY_ATTACKS`` maps an exercise id to
``(args, what was pasted)``: the answer a learner gets by pasting the nearest visible cell,
or by reading a visible table, into the exercise cell. None of them may pass.
"""

import datetime as dt
import decimal
import uuid

import pytest

from helpers.checks import PASSED, evaluate
from helpers.serializer_safety import Cabin, FareQuote, SeatHold


def _candidates(saver):
    return {c.config["configurable"]["thread_id"]: c.metadata for c in saver.list(None, filter={"status": "finished"})}


def naive_rule(saver, today, keep_days):
    """The chapter's first rule: any finished checkpoint old enough (ignores reopened threads)."""
    return sorted({t for t, m in _candidates(saver).items() if today - m["finished_day"] >= keep_days})


def strictly_older(saver, today, keep_days):
    out = []
    for t in _candidates(saver):
        latest = saver.get_tuple({"configurable": {"thread_id": t}}).metadata
        if latest.get("status") == "finished" and today - latest["finished_day"] > keep_days:
            out.append(t)
    return out


def every_finished(saver, today, keep_days):
    out = []
    for t in _candidates(saver):
        if saver.get_tuple({"configurable": {"thread_id": t}}).metadata.get("status") == "finished":
            out.append(t)
    return out


def deletes_itself(saver, today, keep_days):
    for t in ("t-old", "t-edge"):
        saver.delete_thread(t)
    return ["t-edge", "t-old"]


def returns_a_string(saver, today, keep_days):
    return "t-edge,t-old"


def every_thread(saver, today, keep_days):
    return sorted({c.config["configurable"]["thread_id"] for c in saver.list(None)})


def raises(saver, today, keep_days):
    return saver.list(None, filter={"status": "finished"})[0]


WRONG_ANSWERS = {
    "12.1": [
        ((naive_rule,), "t-reopened"),
        ((strictly_older,), ">= keep_days"),
        ((every_finished,), "less than keep_days"),
        ((deletes_itself,), "deleted threads itself"),
        ((returns_a_string,), "return a list"),
        ((every_thread,), "t-open never finished"),
        ((raises,), "raised TypeError"),
    ],
    "12.2": [
        (([FareQuote],), "nested types must be listed too"),
        (([Cabin],), "still blocked: helpers.serializer_safety.FareQuote"),
        (([FareQuote, Cabin, dt.datetime],), "built-in safe list"),
        (([FareQuote, Cabin, decimal.Decimal, uuid.UUID],), "built-in safe list"),
        (([FareQuote, Cabin, SeatHold],), "not in this state"),
        ((True,), "permissive default"),
        ((None,), "None means strict"),
        ((["helpers.serializer_safety"],), "a whole module cannot be allowed"),
        (([FareQuote, Cabin, SeatHold, ("builtins", "print")],), "not in this state"),
        (("FareQuote",), "expected a list"),
    ],
    "12.3": [
        (({"checkpoints after 5 turns": 15, "messages after 5 turns": 10,
           "checkpoints at the end": 3, "messages at the end": 2},), "never holds more than 4"),
        (({"checkpoints after 5 turns": 12, "messages after 5 turns": 4,
           "checkpoints at the end": 3, "messages at the end": 2},), "3 per turn"),
        (({"checkpoints after 5 turns": 15, "messages after 5 turns": 4,
           "checkpoints at the end": 18, "messages at the end": 4},), "removed the whole history"),
        (({"checkpoints after 5 turns": 15, "messages after 5 turns": 4,
           "checkpoints at the end": 3, "messages at the end": 4},), "starts empty"),
        (({"checkpoints after 5 turns": 15},), "missing key"),
        (([15, 4, 3, 2],), "expected a dict"),
        (({"checkpoints after 5 turns": "15", "messages after 5 turns": 4,
           "checkpoints at the end": 3, "messages at the end": 2},), "expected an int"),
    ],
}


def test_right_answers_pass():
    def rule(saver, today, keep_days):
        out = []
        for t in {c.config["configurable"]["thread_id"] for c in saver.list(None, filter={"status": "finished"})}:
            latest = saver.get_tuple({"configurable": {"thread_id": t}}).metadata
            if latest.get("status") == "finished" and today - latest["finished_day"] >= keep_days:
                out.append(t)
        return set(out)

    assert evaluate("12.1", rule).status == PASSED
    assert evaluate("12.2", [("helpers.serializer_safety", "FareQuote"), Cabin]).status == PASSED
    assert evaluate("12.3", {"checkpoints after 5 turns": 15, "messages after 5 turns": 4,
                             "checkpoints at the end": 3, "messages at the end": 2}).status == PASSED


COPY_ATTACKS = {
    "12.1": [
        ((naive_rule,), "the first retention rule of 'Retention by metadata', as a function"),
        ((lambda saver, today, keep_days: sorted(
            {c.config["configurable"]["thread_id"] for c in saver.list(None, filter={"status": "finished"})}),),
         "the 'finished:' listing of that section's first cell"),
    ],
    "12.2": [
        (([FareQuote, Cabin, SeatHold],), "the allowlist cell of 'The unregistered type warning'"),
        (([FareQuote, Cabin, SeatHold, dt.datetime, decimal.Decimal, uuid.UUID],),
         "that allowlist plus every type the prompt names"),
    ],
    "12.3": [
        (({"checkpoints after 5 turns": 12, "messages after 5 turns": 4,
           "checkpoints at the end": 12, "messages at the end": 4},), "the growth-trim row of the state-growth table"),
        (({"checkpoints after 5 turns": 12, "messages after 5 turns": 4,
           "checkpoints at the end": 3, "messages at the end": 2},),
         "that row, then 'after: ' of the delete_thread cell for the end"),
    ],
}


@pytest.mark.parametrize("exercise_id,args,pasted",
                         [(e, args, what) for e, attacks in COPY_ATTACKS.items() for args, what in attacks])
def test_pasting_the_nearest_visible_cell_does_not_pass(exercise_id, args, pasted):
    assert evaluate(exercise_id, *args).status != PASSED, pasted
