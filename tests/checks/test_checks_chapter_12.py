"""Wrong answers for chapter 12's exercises must fail with a hint (same shape as chapter 00)."""

import datetime as dt

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
        (([FareQuote, SeatHold],), "nested types must be listed too"),
        (([FareQuote, Cabin],), "still blocked: helpers.serializer_safety.SeatHold"),
        (([FareQuote, Cabin, SeatHold, dt.datetime],), "built-in safe list"),
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
    assert evaluate("12.2", [("helpers.serializer_safety", "FareQuote"), Cabin, SeatHold]).status == PASSED
    assert evaluate("12.3", {"checkpoints after 5 turns": 15, "messages after 5 turns": 4,
                             "checkpoints at the end": 3, "messages at the end": 2}).status == PASSED
