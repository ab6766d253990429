"""Wrong answers for chapter 00's exercises must fail with a hint.

Every ``tests/checks/test_checks_chapter_NN.py`` has the same shape: ``WRONG_ANSWERS`` maps an
exercise id to ``(args, hint)`` cases, where ``args`` is the tuple passed to the check and
``hint`` a substring the failure message must contain. tests/checks/test_exercises.py runs them all.
"""

WRONG_ANSWERS = {
    "00.1": [
        (({"visa": "steps", "itinerary": "steps", "laptop": "failure"},), "1 of 3 is off; hint: the visa case"),
        (({"visa": "steps", "itinerary": "time", "laptop": "failure"},), "2 of 3 are off"),
        (({"visa": "time", "itinerary": "steps"},), "missing scenario"),
        (({"visa": "time", "itinerary": "steps", "laptop": "crash"},), "not one of"),
        ((["time", "steps", "failure"],), "expected a dict"),
    ],
}
