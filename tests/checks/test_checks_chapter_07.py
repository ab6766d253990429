"""Wrong answers for chapter 07's exercises must fail with a hint (same shape as chapter 00)."""

from langgraph.types import interrupt

from helpers.approval_workflow import outbox, send_confirmation
from helpers.checks import PASSED, evaluate

QUESTION = {"question": "Book this fare?", "fare": 540}


def _confirm_before_asking(state):
    send_confirmation(state["fare"])                 # the classic mistake: effect before the pause
    answer = interrupt({"question": "Book this fare?", "fare": state["fare"]})
    return {"approved": answer == "yes"}


def _confirm_whatever_the_answer(state):
    answer = interrupt({"question": "Book this fare?", "fare": state["fare"]})
    send_confirmation(state["fare"])
    return {"approved": answer == "yes"}


def _never_asks(state):
    send_confirmation(state["fare"])
    return {"approved": True}


def _returns_the_answer(state):
    answer = interrupt({"question": "Book this fare?", "fare": state["fare"]})
    if answer == "yes":
        send_confirmation(state["fare"])
    return {"approved": answer}


def _wrong_question(state):
    answer = interrupt("Book?")
    if answer == "yes":
        send_confirmation(state["fare"])
    return {"approved": answer == "yes"}


def _reference_node(state):
    answer = interrupt({"question": "Book this fare?", "fare": state["fare"]})
    if answer == "yes":
        send_confirmation(state["fare"])
        return {"approved": True}
    return {"approved": False}


WRONG_ANSWERS = {
    "07.1": [
        (({"starts": 2, "receipts": 1},), "three invokes"),
        (({"starts": 3, "receipts": 1},), "second resume also starts from the top"),
        (({"starts": 3, "receipts": 3},), "before send_receipt() is reached"),
        (({"starts": 3},), "missing key"),
        (({"starts": "3", "receipts": 2},), "expected an int"),
        (((3, 2),), "expected a dict"),
    ],
    "07.2": [
        ((lambda interrupts: "yes",), "a plain value raises RuntimeError"),
        ((lambda interrupts: {i.value["approver"]: "yes" for i in interrupts},), "interrupt.id"),
        ((lambda interrupts: {i.id: i.value["amount"] <= i.value["limit"] for i in interrupts},), "'yes' or 'no'"),
        ((lambda interrupts: {i.id: "yes" if i.value["amount"] < i.value["limit"] else "no" for i in interrupts},),
         "use <="),
        ((lambda interrupts: {i.id: "yes" if i.value["item"] == "fare" else "no" for i in interrupts},),
         "value['limit']"),
        ((lambda interrupts: {interrupts[0].id: "yes"},), "one per pending interrupt"),
    ],
    "07.3": [
        ((_confirm_before_asking,), "before anyone answered"),
        ((_confirm_whatever_the_answer,), "rejected booking sent a confirmation"),
        ((_never_asks,), "did not pause"),
        ((_returns_the_answer,), "should be True after 'yes'"),
        ((_wrong_question,), "the approver should see"),
        (("approve_and_confirm",), "expected a function"),
    ],
}


def test_reference_answers_pass_and_leave_the_outbox_empty():
    assert evaluate("07.1", {"starts": 3, "receipts": 2}).status == PASSED
    assert evaluate("07.2", lambda ps: {i.id: "yes" if i.value["amount"] <= i.value["limit"] else "no"
                                        for i in ps}).status == PASSED
    assert evaluate("07.3", _reference_node).status == PASSED
    assert outbox.sent == []
