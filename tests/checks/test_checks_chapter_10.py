"""Wrong answers for chapter 10's exercises must fail with a hint; right ones must pass.

Same shape as tests/checks/test_checks_chapter_00.py: ``WRONG_ANSWERS`` maps an exercise id to
``(args, hint)`` cases, where ``args`` is the tuple passed to the check and ``hint`` a
substring the failure message must contain.
"""

import uuid

import pytest

from helpers.checks import PASSED, evaluate

# ----------------------------------------------------------------------------- 10.2-10.4
KINDS = {"timeout": "retry", "double_click": "retry", "reload": "retry",
         "regenerate": "regenerate", "same_words": "new message"}
NEW_IDS = {"retry": {"request_id"}, "regenerate": {"command_id", "run_id", "request_id"},
           "new message": {"message_id", "command_id", "run_id", "request_id"}}
CHOICE = {"command_id": "uuid4", "run_id": "uuid5", "audit_event_id": "uuid7",
          "queue_position": "sequence", "checkpoint_id": "runtime"}

WRONG_ANSWERS = {
    "10.2": [
        (({**KINDS, "same_words": "retry"}, NEW_IDS), "deduplicate on ids, never on text"),
        (({**KINDS, "double_click": "new message"}, NEW_IDS), "command id minted when Send was pressed"),
        (({k: v for k, v in KINDS.items() if k != "reload"}, NEW_IDS), "missing scenario"),
        ((KINDS, {**NEW_IDS, "retry": {"request_id", "command_id"}}), "a retry reuses the command id"),
        ((KINDS, {**NEW_IDS, "retry": set()}), "misses request_id"),
        ((KINDS, {**NEW_IDS, "regenerate": {"command_id", "run_id", "request_id", "message_id"}}), "message_id stays"),
        ((KINDS, {**NEW_IDS, "regenerate": {"command_id", "request_id"}}), "new run_id"),
        ((KINDS, {**NEW_IDS, "new message": NEW_IDS["new message"] | {"thread_id"}}), "same conversation and thread"),
        ((KINDS, {**NEW_IDS, "retry": "request_id"}), "should be a set"),
    ],
    "10.3": [
        (({**CHOICE, "queue_position": "uuid7"},), "not an order"),
        (({**CHOICE, "run_id": "uuid4"},), "name-based uuid5"),
        (({**CHOICE, "checkpoint_id": "uuid7"},), "never mint them"),
        (({**CHOICE, "command_id": "uuid5"},), "unguessable"),
        (({**CHOICE, "audit_event_id": "uuid4"},), "time-ordered uuid7"),
        (({**CHOICE, "command_id": "uuid8"},), "not one of"),
    ],
    "10.4": [
        ((lambda run_id, effect, info: info.task_id,), "after a real crash"),
        ((lambda run_id, effect, info: f"{info.thread_id}:{info.task_id}",), "after a real crash"),
        ((lambda run_id, effect, info: f"{info.run_id}:{effect}",), "LangGraph's run_id is new"),
        ((lambda run_id, effect, info: info.checkpoint_id,), "got the same key"),
        ((lambda run_id, effect, info: run_id,), "Put the effect's name into the key"),
        ((lambda run_id, effect, info: f"{info.task_id}:{info.node_attempt}",), "attempt 1 and attempt 2"),
        ((lambda run_id, effect, info: f"{info.thread_id}:{effect}",), "a new command"),
        ((lambda run_id, effect, info: str(uuid.uuid4()),), "a random part"),
        ((lambda run_id, effect, info: 42,), "expected a str"),
        ((lambda run_id, effect, info: info.task_name,), "raised AttributeError"),
    ],
}


@pytest.mark.parametrize("exercise_id,args", [
    ("10.2", (KINDS, NEW_IDS)),
    ("10.3", (CHOICE,)),
    ("10.4", (lambda run_id, effect, info: str(uuid.uuid5(uuid.UUID(run_id), effect)),)),
    ("10.4", (lambda run_id, effect, info: f"{run_id}:{effect}",)),
])
def test_right_answers_pass(exercise_id, args):
    result = evaluate(exercise_id, *args)
    assert result.status == PASSED, result
