"""Wrong answers for chapter 10's exercises must fail with a hint; right ones must pass.

Same shape as tests/checks/test_checks_chapter_00.py: ``WRONG_ANSWERS`` maps an exercise id to
``(args, hint)`` cases, where ``args`` is the tuple passed to the check and ``hint`` a
substring the failure message must contain. ``COPY_ATTACKS`` maps an exercise id to
``(args, what was pasted)``: the answer a learner gets by pasting the nearest visible cell,
or by reading a visible table, into the exercise cell. None of them may pass.
"""

import uuid

import pytest

from helpers.checks import PASSED, evaluate

DECISIONS = {"user/conversation": "split: cardinality",
             "order/payment, one charge": "share",
             "message/command, no regenerate": "share",
             "command/operation, two seats": "split: cardinality",
             "conversation/thread, state expires": "split: lifetime"}
KINDS = {"timeout": "retry", "double_click": "retry", "offline": "retry",
         "regenerate": "regenerate", "same_words": "new message"}
NEW_IDS = {"retry": {"request_id"}, "regenerate": {"command_id", "run_id", "request_id"},
           "new message": {"message_id", "command_id", "run_id", "request_id"}}
CHOICE = {"share_link_id": "uuid4", "leg_operation_id": "uuid5", "log_event_id": "uuid7",
          "event_time": "timestamp column", "turn_number": "sequence", "task_id": "runtime"}

WRONG_ANSWERS = {
    "10.1": [
        (({**DECISIONS, "order/payment, one charge": "split: lifetime"},), "Two 'no's share one value"),
        (({**DECISIONS, "message/command, no regenerate": "split: cardinality"},), "serve as the command ID"),
        (({**DECISIONS, "command/operation, two seats": "share"},), "drop the second as a duplicate"),
        (({**DECISIONS, "command/operation, two seats": "split: lifetime"},), "two effects of one command"),
        (({**DECISIONS, "conversation/thread, state expires": "share"},), "outlives its graph state"),
        (({**DECISIONS, "user/conversation": "split"},), "not one of"),
        (({k: v for k, v in DECISIONS.items() if k != "user/conversation"},), "missing pair"),
        ((["share"] * 5,), "expected a dict"),
    ],
    "10.2": [
        (({**KINDS, "same_words": "retry"}, NEW_IDS), "deduplicate on ids, never on text"),
        (({**KINDS, "double_click": "new message"}, NEW_IDS), "command id minted when Send was pressed"),
        (({**KINDS, "offline": "new message"}, NEW_IDS), "the IDs it minted when Ana pressed Send"),
        (({k: v for k, v in KINDS.items() if k != "offline"}, NEW_IDS), "missing scenario"),
        ((KINDS, {**NEW_IDS, "retry": {"request_id", "command_id"}}), "a retry reuses the command id"),
        ((KINDS, {**NEW_IDS, "retry": {"request_id", "run_id"}}), "starts no second run"),
        ((KINDS, {**NEW_IDS, "retry": set()}), "misses request_id"),
        ((KINDS, {**NEW_IDS, "regenerate": {"command_id", "run_id", "request_id", "message_id"}}), "message_id stays"),
        ((KINDS, {**NEW_IDS, "regenerate": {"command_id", "request_id"}}), "new run_id"),
        ((KINDS, {**NEW_IDS, "new message": NEW_IDS["new message"] | {"thread_id"}}), "same conversation and thread"),
        ((KINDS, {**NEW_IDS, "retry": "request_id"}), "should be a set"),
    ],
    "10.3": [
        (({**CHOICE, "turn_number": "uuid7"},), "not an order between writers"),
        (({**CHOICE, "leg_operation_id": "uuid4"},), "computed again from its inputs"),
        (({**CHOICE, "task_id": "uuid5"},), "never mint them"),
        (({**CHOICE, "share_link_id": "uuid5"},), "as guessable as the reference"),
        (({**CHOICE, "share_link_id": "uuid7"},), "begins with the millisecond it was made"),
        (({**CHOICE, "share_link_id": "sequence"},), "nobody may guess it"),
        (({**CHOICE, "log_event_id": "uuid4"},), "end of its file's index"),
        (({**CHOICE, "log_event_id": "sequence"},), "no shared sequence"),
        (({**CHOICE, "event_time": "uuid7"},), "keeps sort order, not the time"),
        (({**CHOICE, "event_time": "sequence"},), "no ID at all"),
        (({**CHOICE, "share_link_id": "uuid8"},), "not one of"),
        (({k: v for k, v in CHOICE.items() if k != "event_time"},), "missing need"),
    ],
    "10.4": [
        ((lambda command_id, effect, info: info.task_id,), "after a real crash"),
        ((lambda command_id, effect, info: f"{info.thread_id}:{info.task_id}",), "after a real crash"),
        ((lambda command_id, effect, info: f"{info.run_id}:{effect}",), "after a real crash"),
        ((lambda command_id, effect, info: info.checkpoint_id,), "got the same key"),
        ((lambda command_id, effect, info: command_id,), "which effect it is for"),
        ((lambda command_id, effect, info: f"{info.task_id}:{info.node_attempt}",), "attempt 1 and attempt 2"),
        ((lambda command_id, effect, info: f"{info.thread_id}:{effect}",), "a new command"),
        ((lambda command_id, effect, info: str(uuid.uuid4()),), "a random part"),
        ((lambda command_id, effect, info: 42,), "expected a str"),
        ((lambda command_id, effect, info: info.task_name,), "raised AttributeError"),
    ],
}

COPY_ATTACKS = {
    "10.1": [
        (({"user/conversation": "split: cardinality", "order/payment, one charge": "split: lifetime",
           "message/command, no regenerate": "split: cardinality", "command/operation, two seats": "split: cardinality",
           "conversation/thread, state expires": "split: lifetime"},),
         "the decision table of 'Two questions that decide whether to split an ID', read row by row: "
         "conversation/thread and message/command split, whatever the case"),
        (({pair: "split: cardinality" for pair in DECISIONS},), "splitting every pair 'to be safe'"),
    ],
    "10.2": [
        (({**KINDS, "offline": "new message"},
          {"retry": {"request_id"}, "regenerate": {"command_id", "request_id"},
           "new message": {"message_id", "command_id", "request_id"}}),
         "the same/NEW table of 'A retry, and a regenerate' (it has no run_id column), extended to a new message"),
    ],
    "10.3": [
        (({"share_link_id": "uuid5", "leg_operation_id": "uuid5", "log_event_id": "uuid7", "event_time": "uuid7",
           "turn_number": "sequence", "task_id": "runtime"},),
         "the uuid key point read literally: uuid5 for what the server can recompute (the booking reference), "
         "uuid7 for anything about time"),
        (({"share_link_id": "uuid4", "leg_operation_id": "uuid5", "log_event_id": "uuid7", "event_time": "uuid7",
           "turn_number": "uuid7", "task_id": "uuid4"},),
         "the uuid_properties table of 'uuid4, uuid5, uuid7, prefixes and format limits' read literally: "
         "embeds_time is a timestamp, sorted_by_creation an order"),
        (({"message_id": "uuid4", "leg_operation_id": "uuid5", "log_event_id": "uuid7", "turn_number": "sequence",
           "task_id": "runtime"},), "the previous edition's answer (five needs, message_id instead of the share link)"),
    ],
    "10.4": [
        ((lambda command_id, effect, info: None,), "the key_fn of the hold graph cell in 'Runtime IDs, and four "
                                                   "things called run_id'"),
        ((lambda command_id, effect, info: info.task_id,), "the task column of that cell's table"),
    ],
}


@pytest.mark.parametrize("exercise_id,args", [
    ("10.1", (DECISIONS,)),
    ("10.1", ({**DECISIONS, "user/conversation": "split: lifetime"},)),
    ("10.2", (KINDS, NEW_IDS)),
    ("10.3", (CHOICE,)),
    ("10.4", (lambda command_id, effect, info: str(uuid.uuid5(uuid.UUID(command_id), effect)),)),
    ("10.4", (lambda command_id, effect, info: f"{command_id}:{effect}",)),
])
def test_right_answers_pass(exercise_id, args):
    result = evaluate(exercise_id, *args)
    assert result.status == PASSED, result


@pytest.mark.parametrize("exercise_id,args,pasted",
                         [(e, args, what) for e, attacks in COPY_ATTACKS.items() for args, what in attacks])
def test_pasting_the_nearest_visible_cell_does_not_pass(exercise_id, args, pasted):
    assert evaluate(exercise_id, *args).status != PASSED, pasted


def test_the_crash_hint_does_not_hand_over_the_solution():
    result = evaluate("10.4", lambda command_id, effect, info: f"{info.task_id}:{effect}")
    assert "after a real crash" in result.message
    assert "uuid5" not in result.message and "command_id" not in result.message, result.message
