"""Wrong answers for chapter 06's exercises must fail with a hint (same shape as chapter 00)."""


import uuid

from helpers.checks import PASSED, evaluate


def _diagnose_type_of_error(snapshot):
    """A learner's mistake: task.error is a string here, so type() says 'str'."""
    return {"failed": {t.name: type(t.error).__name__ for t in snapshot.tasks if t.error is not None},
            "saved": sorted(t.name for t in snapshot.tasks if t.result is not None)}


def _diagnose_full_repr(snapshot):
    return {"failed": {t.name: t.error for t in snapshot.tasks if t.error is not None},
            "saved": sorted(t.name for t in snapshot.tasks if t.result is not None)}


def _diagnose_hardcoded(snapshot):
    return {"failed": {"lookup_fare": "TimeoutError"}, "saved": ["lookup_seat"]}


def _diagnose_all_tasks_saved(snapshot):
    return {"failed": {t.name: str(t.error).split("(")[0] for t in snapshot.tasks if t.error is not None},
            "saved": sorted(t.name for t in snapshot.tasks)}


def _diagnose_unsorted(snapshot):
    return {"failed": {t.name: str(t.error).split("(")[0] for t in snapshot.tasks if t.error is not None},
            "saved": sorted((t.name for t in snapshot.tasks if t.result is not None), reverse=True)}


def _diagnose_no_saved_key(snapshot):
    return {"failed": {}}


WRONG_ANSWERS = {
    "06.1": [
        (({"lookup_seat": 3, "lookup_fare": 3, "lookup_bags": 3, "price_trip": 1},), "pending write"),
        (({"lookup_seat": 1, "lookup_fare": 2, "lookup_bags": 1, "price_trip": 1},), "count every call"),
        (({"lookup_seat": 1, "lookup_fare": 3, "lookup_bags": 1, "price_trip": 0},), "next super-step"),
        (({"lookup_seat": 1, "lookup_fare": 3, "lookup_bags": 1},), "missing node"),
        (({"lookup_seat": "1", "lookup_fare": 3, "lookup_bags": 1, "price_trip": 1},), "expected an int"),
        (([1, 3, 1, 1],), "expected a dict"),
    ],
    "06.2": [
        ((_diagnose_type_of_error,), "repr as a string"),
        ((_diagnose_full_repr,), "only the type name"),
        ((_diagnose_hardcoded,), "three lookups where the seat lookup failed"),
        ((_diagnose_all_tasks_saved,), "failed task has no saved result"),
        ((_diagnose_unsorted,), "not sorted"),
        ((_diagnose_no_saved_key,), "no key(s) ['saved']"),
        ((lambda snapshot: snapshot.next,), "expected a dict"),
        (("diagnose",), "expected a function"),
    ],
    "06.3": [
        # the lesson of the chapter: a runtime ID does not come back after a real crash under the default durability
        ((lambda state, info, effect: f"{info.thread_id}/{info.task_id}/{effect}",), "info.task_id"),
        ((lambda state, info, effect: f"{state['command_id']}/{info.checkpoint_id}/{effect}",), "info.task_id"),
        ((lambda state, info, effect: f"{state['command_id']}/{info.run_id}/{effect}",), "info.run_id"),
        ((lambda state, info, effect: f"{state['command_id']}/{effect}/{info.node_attempt}",), "info.node_attempt"),
        ((lambda state, info, effect: str(uuid.uuid4()),), "what the client sends again"),
        ((lambda state, info, effect: f"{info.thread_id}/{effect}",), "two different commands"),
        ((lambda state, info, effect: state["command_id"],), "is the command ID itself"),
        # one-to-one re-encodings of the command ID: a hotel key built the same way would be identical
        ((lambda state, info, effect: state["command_id"].upper(),), "two effects of one command"),
        ((lambda state, info, effect: str(uuid.uuid5(uuid.NAMESPACE_URL, state["command_id"])),),
         "two effects of one command"),
        ((lambda state, info, effect: str(uuid.uuid5(uuid.UUID(state["command_id"]), "book_seat")),),
         "two effects of one command"),
        ((lambda state, info, effect: uuid.uuid5(uuid.UUID(state["command_id"]), effect),), "expected a str"),
        ((lambda state, info, effect: state["booking_id"],), "raised KeyError"),
        ((lambda state, info: str(uuid.uuid5(uuid.UUID(state["command_id"]), "book_seat")),), "raised TypeError"),
        (("book_seat",), "expected a function"),
    ],
}


# what a learner gets by pasting the nearest visible cell (or reading a visible table) into the exercise cell
COPY_ATTACKS = {
    "06.1": [(({"lookup_seat": 1, "lookup_fare": 2, "lookup_bags": 1, "price_trip": 1},),
              "the counts of section 'Predict, then run: resume the failed step' (seat 1, fare 2), one per node")],
    "06.2": [((_diagnose_full_repr,), "the table cell of section 'get_state() shows which task failed' (t.error)")],
    "06.3": [((lambda state, info: f"{info.thread_id}/{info.task_id}",),
              "cell 'task_key' of section 'A task ID does not survive every crash', pasted as it is"),
             ((lambda state, info, effect: f"{info.thread_id}/{info.task_id}",),
              "cell 'task_key' of section 'A task ID does not survive every crash', with an effect parameter added"),
             ((lambda state, info, effect: str(uuid.uuid4()),),
              "cell 'record_ids' of section 'Which IDs could go into the key?'")],
}


def test_reference_answers_pass():
    def diagnose(snapshot):
        return {"failed": {t.name: str(t.error).split("(", 1)[0] for t in snapshot.tasks if t.error is not None},
                "saved": sorted(t.name for t in snapshot.tasks if t.result is not None)}

    assert evaluate("06.1", {"lookup_seat": 1, "lookup_fare": 3, "lookup_bags": 1, "price_trip": 1}).status == PASSED
    assert evaluate("06.2", diagnose).status == PASSED
    def idempotency_key(state, info, effect):
        return str(uuid.uuid5(uuid.UUID(state["command_id"]), effect))

    assert evaluate("06.3", idempotency_key).status == PASSED
    # the thread may be part of the key: it is the same in every attempt at one request
    assert evaluate("06.3", lambda state, info, effect: f"{info.thread_id}/{state['command_id']}/{effect}").status \
        == PASSED
