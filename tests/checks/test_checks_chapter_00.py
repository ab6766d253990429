"""Wrong answers for chapter 00's exercises must fail with a hint.

Every ``tests/checks/test_checks_chapter_NN.py`` has the same shape: ``WRONG_ANSWERS`` maps an
exercise id to ``(args, hint)`` cases, where ``args`` is the tuple passed to the check and
``hint`` a substring the failure message must contain. tests/checks/test_exercises.py runs them all.
``COPY_ATTACKS`` maps an exercise id to ``(args, what was pasted)`` cases: the answer a learner
gets by pasting the nearest visible cell, or by reading a visible table; none may pass.
"""


from helpers.checks import PASSED, evaluate

RIGHT_KINDS = {"laptop": "failure", "visa": "time", "refund": "time", "itinerary": "steps"}

WRONG_ANSWERS = {
    "00.1": [
        (({**RIGHT_KINDS, "visa": "steps"},), "1 of 4 is off; hint: the visa case"),
        (({**RIGHT_KINDS, "refund": "failure"},), "1 of 4 is off; hint: the refund case"),
        (({**RIGHT_KINDS, "visa": "steps", "itinerary": "time"},), "2 of 4 are off"),
        (({"laptop": "failure", "visa": "time", "itinerary": "steps"},), "missing scenario"),
        (({**RIGHT_KINDS, "laptop": "crash"},), "not one of"),
        ((["time", "steps", "failure"],), "expected a dict"),
    ],
}

COPY_ATTACKS = {
    "00.1": [
        (({"laptop": "time", "visa": "steps", "refund": "failure", "itinerary": "failure"},),
         "the kinds in the order of the table in 'Three ways a task is \"long\"', one per scenario"),
        (({"laptop": "failure", "visa": "time", "refund": "steps", "itinerary": "steps"},),
         "each kind used once, as the table's three rows suggest"),
    ],
}


def test_right_answer_passes():
    assert evaluate("00.1", dict(RIGHT_KINDS)).status == PASSED
