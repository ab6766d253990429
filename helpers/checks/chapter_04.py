"""Checks for chapter 04 (checkpoint IDs)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from .protocol import Fail, NotAttempted, call_answer, exercise, expect_type

SPECIMEN_STEPS = (-1, 0, 1, 2, 5, 41, 300)
SPECIMEN_TIMES = (
    datetime(2025, 3, 14, 9, 26, 53, 123456, tzinfo=timezone.utc),
    datetime(2001, 1, 1, tzinfo=timezone.utc),
    datetime(2031, 7, 4, 18, 30, 0, 500000, tzinfo=timezone.utc),
)



@exercise("04.1")
def decode_step_check(decode_step):
    from langgraph.checkpoint.base.id import uuid6

    from helpers.checkpoint_ids import make_uuid6

    for step in SPECIMEN_STEPS:
        for made in (str(uuid6(clock_seq=step)), str(make_uuid6(SPECIMEN_TIMES[0], step, 0xABCDEF))):
            group = made.split("-")[3]
            got = call_answer(decode_step, made, what="decode_step(checkpoint_id)", case=f"an ID whose 4th group is {group}")
            expect_type(got, int, "the step")
            if got == step:
                continue
            if step == -1 and got == 0x3FFF:
                raise Fail("for the 4th group bfff you returned 16383: 14-bit values from 0x2000 up are negative, "
                           "subtract 0x4000 (so 0x3FFF is -1)")
            if got == (0x8000 | (step & 0x3FFF)) or got == int(group, 16):
                raise Fail(f"for the 4th group {group} you returned {got}: mask off the variant bits with & 0x3FFF")
            raise Fail(f"for an ID with step {step} (4th group {group}) you returned {got}; "
                       "read the 4th dash-separated group, it holds the variant bits plus clock_seq")
    return "steps decoded from the 4th group, including -1 for bfff"


@exercise("04.2")
def minted_at_check(minted_at):
    from helpers.checkpoint_ids import GREGORIAN_TO_UNIX_100NS, make_uuid6, to_datetime

    for when in SPECIMEN_TIMES:
        made = make_uuid6(when, 3, 0x123456)
        got = call_answer(minted_at, str(made), what="minted_at(checkpoint_id)", case=f"an ID minted at {when.isoformat()}")
        expect_type(got, datetime, "the moment the ID was minted")
        aware = got if got.tzinfo is not None else got.replace(tzinfo=timezone.utc)
        if abs(aware - when) <= timedelta(microseconds=1):
            continue
        if abs(aware - to_datetime(made.time)) <= timedelta(microseconds=1):
            raise Fail("that is uuid.UUID(...).time, which reads the v1 layout; reassemble time_high (first 32 bits), "
                       "time_mid (next 16) and time_low (12 bits after the version digit)")
        shifted = when + timedelta(microseconds=GREGORIAN_TO_UNIX_100NS // 10)
        if abs(aware - shifted) <= timedelta(seconds=1) or abs(aware - (when - timedelta(microseconds=GREGORIAN_TO_UNIX_100NS // 10))) <= timedelta(seconds=1):
            raise Fail("your date is off by 1582 -> 1970: the count starts at 1582-10-15 UTC, not at the Unix epoch")
        raise Fail(f"for an ID minted at {when.isoformat()} you returned {got.isoformat()}; the timestamp counts "
                   "100-ns units (divide by 10 for microseconds) since 1582-10-15 UTC")
    return "v6 timestamps decoded correctly"


def _guard_fixture():
    """A saver with two threads; returns (saver, a real ID of 'ana', an ID of 'bo', an invented ID)."""
    from langgraph.checkpoint.base.id import uuid6
    from langgraph.checkpoint.memory import InMemorySaver

    from helpers.travel_graphs import build_chat_graph, say

    saver = InMemorySaver()
    graph = build_chat_graph(saver)
    for thread in ("ana", "bo"):
        say(graph, thread, "I prefer a window seat")
    ids = {t: [s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(
        {"configurable": {"thread_id": t}})] for t in ("ana", "bo")}
    invented = str(uuid6(clock_seq=1))
    return saver, ids["ana"][1], ids["bo"][0], invented


def _refused(checked_config: Any, saver: Any, thread_id: str, checkpoint_id: str, case: str, hint: str) -> None:
    what = "checked_config(saver, thread_id, checkpoint_id)"
    try:
        got = call_answer(checked_config, saver, thread_id, checkpoint_id, what=what)
    except (Fail, NotAttempted):
        raise
    except LookupError:
        return
    except Exception as exc:
        raise Fail(f"for {case} you raised {type(exc).__name__}; raise LookupError (or its subclass KeyError) "
                   "so callers can catch one error type") from None
    if got is None:
        raise Fail(f"for {case} you returned None; raise LookupError instead, so the caller cannot go on by mistake")
    raise Fail(f"for {case} you returned a config; {hint}")


@exercise("04.3")
def checked_config_check(checked_config):
    saver, real, foreign, invented = _guard_fixture()
    try:
        got = call_answer(checked_config, saver, "ana", real, what="checked_config(saver, thread_id, checkpoint_id)")
    except (Fail, NotAttempted):
        raise
    except Exception as exc:
        raise Fail(f"for a real checkpoint of thread 'ana' you raised {type(exc).__name__}: {exc}; "
                   "a stored checkpoint must give back its config") from None
    expect_type(got, dict, "the invoke config")
    inner = got.get("configurable")
    if not isinstance(inner, dict) or inner.get("thread_id") != "ana" or inner.get("checkpoint_id") != real:
        raise Fail("return {'configurable': {'thread_id': thread_id, 'checkpoint_id': checkpoint_id}} "
                   "for a checkpoint the saver stores")
    _refused(checked_config, saver, "ana", invented, "an invented (well-formed uuid6) ID",
             "a well-formed ID can still be invented: ask the saver with saver.get_tuple(config)")
    _refused(checked_config, saver, "ana", foreign, "an ID that belongs to thread 'bo'",
             "that ID exists, but in another thread: look it up with this thread_id in the config, "
             "not across all threads")
    return "real IDs pass; invented and foreign IDs are refused with LookupError"
