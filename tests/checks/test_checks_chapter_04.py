"""Wrong answers for chapter 04's exercises must fail with a hint (see test_checks_chapter_00)."""

import uuid
from datetime import UTC, datetime, timedelta

from helpers.checks import PASSED, evaluate


def step_unsigned(cid):
    return int(cid.split("-")[3], 16) & 0x3FFF


def step_with_variant(cid):
    return int(cid.split("-")[3], 16)


def step_minus_8000(cid):
    return int(cid.split("-")[3], 16) - 0x8000


def step_wrong_group(cid):
    return int(cid.split("-")[2], 16) & 0x3FFF


def step_as_text(cid):
    return cid.split("-")[3]


def step_raises(cid):
    return uuid.UUID(cid).clock_seq_missing


def minted_stdlib(cid):
    return datetime(1582, 10, 15, tzinfo=UTC) + timedelta(microseconds=uuid.UUID(cid).time // 10)


def _v6_count(cid):
    n = uuid.UUID(cid).int
    return ((n >> 80) << 12) | ((n >> 64) & 0x0FFF)


def minted_unix_epoch(cid):
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=_v6_count(cid) // 10)


def minted_wrong_unit(cid):
    return datetime(1582, 10, 15, tzinfo=UTC) + timedelta(microseconds=_v6_count(cid) // 1000)


def minted_as_float(cid):
    return _v6_count(cid) / 1e7


def _config(thread_id, checkpoint_id):
    return {"configurable": {"thread_id": thread_id, "checkpoint_id": checkpoint_id}}


def step_sign_rule(cid):
    seq = int(cid.split("-")[3], 16) & 0x3FFF
    return seq - 0x4000 if seq >= 0x2000 else seq  # misreads real steps from 8192 up


def _owned_thread(conversations, user_id, conversation_id):
    row = conversations.get(conversation_id)
    if row is None or row["user_id"] != user_id:
        raise PermissionError("not yours")
    return row["thread_id"]


def guard_right(saver, conversations, user_id, conversation_id, checkpoint_id):
    config = _config(_owned_thread(conversations, user_id, conversation_id), checkpoint_id)
    if saver.get_tuple(config) is None:
        raise LookupError(checkpoint_id)
    return config


def guard_no_owner_check(saver, conversations, user_id, conversation_id, checkpoint_id):
    row = conversations.get(conversation_id)
    if row is None:
        raise PermissionError("unknown")
    config = _config(row["thread_id"], checkpoint_id)
    if saver.get_tuple(config) is None:
        raise LookupError(checkpoint_id)
    return config


def guard_conversation_as_thread(saver, conversations, user_id, conversation_id, checkpoint_id):
    _owned_thread(conversations, user_id, conversation_id)
    return _config(conversation_id, checkpoint_id)


def guard_key_error_for_unknown(saver, conversations, user_id, conversation_id, checkpoint_id):
    row = conversations[conversation_id]
    if row["user_id"] != user_id:
        raise PermissionError("not yours")
    return guard_right(saver, conversations, user_id, conversation_id, checkpoint_id)


def guard_format_only(saver, conversations, user_id, conversation_id, checkpoint_id):
    thread = _owned_thread(conversations, user_id, conversation_id)
    if uuid.UUID(checkpoint_id).version != 6:
        raise LookupError(checkpoint_id)
    return _config(thread, checkpoint_id)


def guard_any_thread(saver, conversations, user_id, conversation_id, checkpoint_id):
    thread = _owned_thread(conversations, user_id, conversation_id)
    if not any(t.config["configurable"]["checkpoint_id"] == checkpoint_id for t in saver.list(None)):
        raise LookupError(checkpoint_id)
    return _config(thread, checkpoint_id)


def guard_returns_none(saver, conversations, user_id, conversation_id, checkpoint_id):
    config = _config(_owned_thread(conversations, user_id, conversation_id), checkpoint_id)
    return config if saver.get_tuple(config) else None


def guard_value_error(saver, conversations, user_id, conversation_id, checkpoint_id):
    config = _config(_owned_thread(conversations, user_id, conversation_id), checkpoint_id)
    if saver.get_tuple(config) is None:
        raise ValueError("unknown checkpoint")
    return config


def guard_drops_id(saver, conversations, user_id, conversation_id, checkpoint_id):
    config = guard_right(saver, conversations, user_id, conversation_id, checkpoint_id)
    return {"configurable": {"thread_id": config["configurable"]["thread_id"]}}


def guard_rejects_all(saver, conversations, user_id, conversation_id, checkpoint_id):
    raise LookupError(checkpoint_id)


WRONG_ANSWERS = {
    "04.1": [
        ((step_unsigned,), "return -1 for it"),
        ((step_sign_rule,), "only 0x3FFF means -1"),
        ((step_with_variant,), "variant bits"),
        ((step_minus_8000,), "return -1 for it"),
        ((step_wrong_group,), "4th dash-separated group"),
        ((step_as_text,), "expected an int"),
        ((step_raises,), "raised AttributeError"),
        (("bfff",), "expected a function"),
    ],
    "04.2": [
        ((minted_stdlib,), "v1 layout"),
        ((minted_unix_epoch,), "1582"),
        ((minted_wrong_unit,), "100-ns units"),
        ((minted_as_float,), "expected a datetime"),
    ],
    "04.3": [
        ((guard_no_owner_check,), "the conversation is not Bo's"),
        ((guard_conversation_as_thread,), "conversation id as the thread id"),
        ((guard_key_error_for_unknown,), "raised KeyError; raise PermissionError"),
        ((guard_format_only,), "well-formed ID can still be invented"),
        ((guard_any_thread,), "in another thread"),
        ((guard_returns_none,), "returned None"),
        ((guard_value_error,), "raised ValueError"),
        ((guard_drops_id,), "'checkpoint_id': checkpoint_id"),
        ((guard_rejects_all,), "a stored checkpoint of a conversation the caller owns"),
        (({"configurable": {}},), "expected a function"),
    ],
}


def test_naive_utc_datetime_is_accepted():
    def minted_naive(cid):
        return datetime(1582, 10, 15) + timedelta(microseconds=_v6_count(cid) // 10)
    assert evaluate("04.2", minted_naive).status == PASSED


def test_guard_solution_and_keyerror_pass():
    def guard_key_error(saver, conversations, user_id, conversation_id, checkpoint_id):
        config = _config(_owned_thread(conversations, user_id, conversation_id), checkpoint_id)
        if saver.get_tuple(config) is None:
            raise KeyError(checkpoint_id)
        return config
    assert evaluate("04.3", guard_right).status == PASSED
    assert evaluate("04.3", guard_key_error).status == PASSED


def test_decode_step_solution_passes():
    def decode_step(cid):
        seq = int(cid.split("-")[3], 16) & 0x3FFF
        return -1 if seq == 0x3FFF else seq
    assert evaluate("04.1", decode_step).status == PASSED
