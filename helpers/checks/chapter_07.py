"""Checks for chapter 07 (interrupts)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from ..approval_workflow import APPROVAL_REQUESTS, build_chain, build_parallel_approvals, outbox
from .protocol import Fail, NotAttempted, call_answer, exercise, expect_keys, expect_type

# -- 07.1 ------------------------------------------------------------------------------

EXPECTED_PREDICTION = {"starts": 3, "receipts": 2}


@exercise("07.1")
def check_prediction(answer: Any) -> str:
    expect_type(answer, dict, "{'starts': ..., 'receipts': ...}")
    expect_keys(answer, EXPECTED_PREDICTION)
    expect_type(answer["starts"], int, "how many times the node started")
    expect_type(answer["receipts"], int, "how many receipts were sent")
    if answer["starts"] != 3:
        raise Fail(f"starts = {answer['starts']}? The node starts once per invoke: the first run, and each resume "
                   "runs it again from its first line (three invokes in total)")
    if answer["receipts"] < 2:
        raise Fail(f"receipts = {answer['receipts']}? The second resume also starts from the top: the first "
                   "interrupt returns its saved answer at once, and send_receipt() runs again")
    if answer["receipts"] > 2:
        raise Fail(f"receipts = {answer['receipts']}? The first run pauses at the first interrupt, before "
                   "send_receipt() is reached")
    return "3 starts, 2 receipts: the code between the two interrupts ran twice"


# -- 07.2 ------------------------------------------------------------------------------

CASES_07_2 = [
    ("the chapter's requests", {}, {"fare_answer": "yes", "upgrade_answer": "no"}),
    ("a fare over its limit and a cheap upgrade",
     {"approve_fare": {**APPROVAL_REQUESTS["approve_fare"], "amount": 700},
      "approve_upgrade": {**APPROVAL_REQUESTS["approve_upgrade"], "amount": 120}},
     {"fare_answer": "no", "upgrade_answer": "yes"}),
    ("two amounts exactly at their limits",
     {"approve_fare": {**APPROVAL_REQUESTS["approve_fare"], "amount": 600},
      "approve_upgrade": {**APPROVAL_REQUESTS["approve_upgrade"], "amount": 150}},
     {"fare_answer": "yes", "upgrade_answer": "yes"}),
]


@exercise("07.2")
def check_resume_answers(resume_answers: Any) -> str:
    for n, (label, requests, expected) in enumerate(CASES_07_2):
        graph = build_parallel_approvals(InMemorySaver(), requests)
        config = {"configurable": {"thread_id": f"check-07-2-{n}"}}
        pending = graph.invoke({"trip": "PEK-SFO"}, config)["__interrupt__"]
        answers = call_answer(resume_answers, list(pending), what="resume_answers(interrupts)")
        if not isinstance(answers, dict):
            raise Fail(f"you returned {type(answers).__name__} {answers!r:.40}: with two pending interrupts a plain "
                       "value raises RuntimeError; return a dict from interrupt id to answer")
        ids = {i.id for i in pending}
        if set(answers) != ids:
            raise Fail("the dict's keys must be the interrupts' ids (interrupt.id), one per pending interrupt; "
                       f"got keys like {sorted(map(str, answers))[:2]}")
        bad = sorted({repr(v) for v in answers.values() if v not in ("yes", "no")})
        if bad:
            raise Fail(f"answer with the strings 'yes' or 'no', got {', '.join(bad)}")
        final = graph.invoke(Command(resume=answers), config)
        got = {key: final.get(key) for key in expected}
        if got != expected:
            hint = ("an amount equal to its limit is within it (use <=)" if "limits" in label
                    else "compare each interrupt's value['amount'] with its value['limit']")
            raise Fail(f"for {label} the answers should be {expected}, got {got}; {hint}")
    return "both approvers answered by interrupt id, on three different pairs of requests"


# -- 07.3 ------------------------------------------------------------------------------


class _Booking(TypedDict, total=False):
    route: str
    fare: int
    approved: Any
    upgrade: Any


QUESTION = {"question": "Book this fare?", "fare": 540}
UPGRADE_QUESTION = {"question": "Upgrade the seat?"}


def _quote_fare(state: _Booking) -> dict[str, Any]:
    return {"fare": 540}


def _wrap(node: Callable[[_Booking], Any], seen: dict[str, Any]) -> Callable[[_Booking], dict[str, Any]]:
    def approve_and_confirm(state: _Booking) -> dict[str, Any]:
        out = node(state)
        if out is Ellipsis:
            seen["stub"] = True
            return {}
        return out

    return approve_and_confirm


def _paused_with(result: dict[str, Any]) -> Any:
    return result["__interrupt__"][0].value if "__interrupt__" in result else None


@exercise("07.3")
def check_approve_and_confirm(node: Any) -> str:
    if node is Ellipsis:
        raise NotAttempted("replace the ... with your node function")
    if not callable(node):
        raise Fail(f"expected a function (the node), got {type(node).__name__}")
    for answers in (("yes", "no"), ("yes", "yes"), ("no",)):
        outbox.clear()
        seen: dict[str, Any] = {}
        graph = build_chain(_Booking, [_quote_fare, _wrap(node, seen)], InMemorySaver())
        config = {"configurable": {"thread_id": "check-07-3-" + "-".join(answers)}}
        result = graph.invoke({"route": "PEK-SFO"}, config)
        if seen.get("stub"):
            raise NotAttempted("approve_and_confirm still returns ...: write its body")
        if "__interrupt__" not in result:
            raise Fail("the run did not pause: call interrupt({'question': 'Book this fare?', 'fare': state['fare']}) "
                       "and use what it returns as the answer")
        if _paused_with(result) != QUESTION:
            raise Fail(f"the approver should first see {QUESTION}, got {_paused_with(result)!r:.60}")
        if outbox.sent:
            raise Fail("an e-mail went out before anyone answered: send the confirmation only after the answers")
        result = graph.invoke(Command(resume=answers[0]), config)
        if answers[0] == "yes":
            if _paused_with(result) != UPGRADE_QUESTION:
                raise Fail(f"after 'yes' to the fare, the node should pause again with {UPGRADE_QUESTION}, "
                           f"got {_paused_with(result)!r:.60}")
            result = graph.invoke(Command(resume=answers[1]), config)
            if "__interrupt__" in result:
                raise Fail("after the second answer the node should finish, but it paused again")
            if len(outbox.sent) == 2:
                raise Fail("an approved booking sent 2 confirmations: code between the two interrupt() calls runs "
                           "again on the second resume, because the node re-runs from its first line; send it "
                           "after the last answer")
            if len(outbox.sent) != 1:
                raise Fail(f"an approved booking sent {len(outbox.sent)} confirmations, expected one: call "
                           f"approval_workflow.send_confirmation(state['fare']) once the booking is approved")
            if result.get("approved") is not True or result.get("upgrade") is not (answers[1] == "yes"):
                raise Fail(f"after {' then '.join(map(repr, answers))}, 'approved' should be True and 'upgrade' "
                           f"{answers[1] == 'yes'}, got {result.get('approved')!r} and {result.get('upgrade')!r}")
        else:
            if "__interrupt__" in result:
                raise Fail("after 'no' to the fare, nothing more should be asked: the run should end")
            if outbox.sent:
                raise Fail("a rejected booking sent a confirmation: send it only when the fare is approved")
            if result.get("approved") is not False:
                raise Fail(f"'approved' should be False after 'no', got {result.get('approved')!r}")
    outbox.clear()
    return ("one confirmation after both answers (upgrade or not), none when rejected, none while waiting, "
            "across the re-runs of the node")
