"""Wrong answers for chapter 04's exercises must fail with a hint (see test_checks_chapter_00)."""

import uuid
from datetime import datetime, timedelta, timezone

import pytest

from helpers.checks import NOT_ATTEMPTED, evaluate


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
    return datetime(1582, 10, 15, tzinfo=timezone.utc) + timedelta(microseconds=uuid.UUID(cid).time // 10)


def _v6_count(cid):
    n = uuid.UUID(cid).int
    return ((n >> 80) << 12) | ((n >> 64) & 0x0FFF)


def minted_unix_epoch(cid):
    return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=_v6_count(cid) // 10)


def minted_wrong_unit(cid):
    return datetime(1582, 10, 15, tzinfo=timezone.utc) + timedelta(microseconds=_v6_count(cid) // 1000)


def minted_as_float(cid):
    return _v6_count(cid) / 1e7


def _config(thread_id, checkpoint_id):
    return {"configurable": {"thread_id": thread_id, "checkpoint_id": checkpoint_id}}


def guard_format_only(saver, thread_id, checkpoint_id):
    if uuid.UUID(checkpoint_id).version != 6:
        raise LookupError(checkpoint_id)
    return _config(thread_id, checkpoint_id)


def guard_any_thread(saver, thread_id, checkpoint_id):
    if not any(t.config["configurable"]["checkpoint_id"] == checkpoint_id for t in saver.list(None)):
        raise LookupError(checkpoint_id)
    return _config(thread_id, checkpoint_id)


def guard_returns_none(saver, thread_id, checkpoint_id):
    config = _config(thread_id, checkpoint_id)
    return config if saver.get_tuple(config) else None


def guard_value_error(saver, thread_id, checkpoint_id):
    config = _config(thread_id, checkpoint_id)
    if saver.get_tuple(config) is None:
        raise ValueError("unknown checkpoint")
    return config


def guard_drops_id(saver, thread_id, checkpoint_id):
    if saver.get_tuple(_config(thread_id, checkpoint_id)) is None:
        raise LookupError(checkpoint_id)
    return {"configurable": {"thread_id": thread_id}}


def guard_rejects_all(saver, thread_id, checkpoint_id):
    raise LookupError(checkpoint_id)


WRONG_ANSWERS = {
    "04.1": [
        ((step_unsigned,), "subtract 0x4000"),
        ((step_with_variant,), "variant bits"),
        ((step_minus_8000,), "subtract 0x4000"),
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
        ((guard_format_only,), "well-formed ID can still be invented"),
        ((guard_any_thread,), "in another thread"),
        ((guard_returns_none,), "returned None"),
        ((guard_value_error,), "raised ValueError"),
        ((guard_drops_id,), "'checkpoint_id': checkpoint_id"),
        ((guard_rejects_all,), "a stored checkpoint must give back its config"),
        (({"configurable": {}},), "expected a function"),
    ],
}


def stub(*args):
    return ...


def test_naive_utc_datetime_is_accepted():
    def minted_naive(cid):
        return datetime(1582, 10, 15) + timedelta(microseconds=_v6_count(cid) // 10)
    assert evaluate("04.2", minted_naive).status == "passed"


def test_guard_solution_and_keyerror_pass():
    def guard(saver, thread_id, checkpoint_id):
        config = _config(thread_id, checkpoint_id)
        if saver.get_tuple(config) is None:
            raise KeyError(checkpoint_id)
        return config
    assert evaluate("04.3", guard).status == "passed"
