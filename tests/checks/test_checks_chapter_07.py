"""Wrong answers for chapter 07's exercises must fail with a hint (same shape as chapter 00)."""

from collections import Counter

from langgraph.types import interrupt

from helpers.approval_workflow import outbox, send_confirmation
from helpers.checks import PASSED, evaluate

FARE_QUESTION = {"question": "Book this fare?"}
UPGRADE = {"question": "Upgrade the seat?"}


def _confirm_before_asking(state):
    send_confirmation(state["fare"])                 # the classic mistake: effect before the pause
    if interrupt({**FARE_QUESTION, "fare": state["fare"]}) != "yes":
        return {"approved": False}
    return {"approved": True, "upgrade": interrupt(UPGRADE) == "yes"}


def _confirm_between_the_questions(state):
    if interrupt({**FARE_QUESTION, "fare": state["fare"]}) != "yes":
        return {"approved": False}
    send_confirmation(state["fare"])                 # runs again when the second resume re-runs the node
    return {"approved": True, "upgrade": interrupt(UPGRADE) == "yes"}


def _confirm_whatever_the_answer(state):
    answer = interrupt({**FARE_QUESTION, "fare": state["fare"]})
    if answer != "yes":
        send_confirmation(state["fare"])
        return {"approved": False}
    upgrade = interrupt(UPGRADE) == "yes"
    send_confirmation(state["fare"])
    return {"approved": True, "upgrade": upgrade}


def _never_asks(state):
    send_confirmation(state["fare"])
    return {"approved": True}


def _one_question_only(state):
    answer = interrupt({**FARE_QUESTION, "fare": state["fare"]})
    if answer == "yes":
        send_confirmation(state["fare"])
        return {"approved": True}
    return {"approved": False}


def _asks_upgrade_after_no(state):
    answer = interrupt({**FARE_QUESTION, "fare": state["fare"]})
    upgrade = interrupt(UPGRADE) == "yes"
    if answer == "yes":
        send_confirmation(state["fare"])
    return {"approved": answer == "yes", "upgrade": upgrade}


def _upgrade_as_string(state):
    if interrupt({**FARE_QUESTION, "fare": state["fare"]}) != "yes":
        return {"approved": False}
    upgrade = interrupt(UPGRADE)
    send_confirmation(state["fare"])
    return {"approved": True, "upgrade": upgrade}


def _wrong_question(state):
    answer = interrupt("Book?")
    if answer == "yes":
        send_confirmation(state["fare"])
    return {"approved": answer == "yes"}


def _reference_node(state):
    if interrupt({**FARE_QUESTION, "fare": state["fare"]}) != "yes":
        return {"approved": False}
    upgrade = interrupt(UPGRADE) == "yes"
    send_confirmation(state["fare"])
    return {"approved": True, "upgrade": upgrade}


# what a learner gets by pasting the nearest visible cell into the exercise cell
_emails = Counter()


def _approve_then_confirm(state):                    # cell 'approve_then_confirm' (fix 2), section "Side effects"
    approved = interrupt({"question": "Book this fare?", "fare": state["fare"]}) == "yes"
    _emails["approve_then_confirm"] += 1
    return {"approved": approved}


def _confirm_trip(state):                            # cell 'confirm_trip', section "Several interrupts at once"
    fare_ok = interrupt("Book the fare?")
    seat_ok = interrupt("Upgrade the seat?")
    return {"answers": [fare_ok, seat_ok]}


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
        ((_confirm_between_the_questions,), "sent 2 confirmations"),
        ((_confirm_whatever_the_answer,), "rejected booking sent a confirmation"),
        ((_never_asks,), "did not pause"),
        ((_one_question_only,), "should pause again"),
        ((_asks_upgrade_after_no,), "nothing more should be asked"),
        ((_upgrade_as_string,), "'upgrade'"),
        ((_wrong_question,), "should first see"),
        (("approve_and_confirm",), "expected a function"),
    ],
}


# what a learner gets by pasting the nearest visible cell (or reading a visible output) into the exercise cell
COPY_ATTACKS = {
    "07.1": [(({"starts": 2, "receipts": 1},), "'approve_booking started 2 times' of section 'Predict, then run: "
                                               "how many times will the node run?'")],
    "07.2": [((lambda interrupts: {i.id: "yes" if i.value["approver"] == "finance" else "no" for i in interrupts},),
              "cell 'answers' of section 'Several interrupts at once' (finance yes, manager no)")],
    "07.3": [((_approve_then_confirm,),
              "cell 'approve_then_confirm' (fix 2) of section 'Side effects before interrupt()'"),
             ((_confirm_trip,), "cell 'confirm_trip' of section 'Several interrupts at once'")],
}


def test_reference_answers_pass_and_leave_the_outbox_empty():
    assert evaluate("07.1", {"starts": 3, "receipts": 2}).status == PASSED
    assert evaluate("07.2", lambda ps: {i.id: "yes" if i.value["amount"] <= i.value["limit"] else "no"
                                        for i in ps}).status == PASSED
    assert evaluate("07.3", _reference_node).status == PASSED
    assert outbox.sent == []
