"""Checks for chapter 04 (checkpoint IDs)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from .protocol import Fail, NotAttempted, call_answer, exercise, expect_type

SPECIMEN_STEPS = (-1, 0, 1, 2, 5, 41, 300, 8191, 8192, 12000, 16382)
SPECIMEN_TIMES = (
    datetime(2025, 3, 14, 9, 26, 53, 123456, tzinfo=UTC),
    datetime(2001, 1, 1, tzinfo=UTC),
    datetime(2031, 7, 4, 18, 30, 0, 500000, tzinfo=UTC),
)



@exercise("04.1")
def check_decode_step(decode_step):
    from langgraph.checkpoint.base.id import uuid6

    from helpers.checkpoint_ids import make_uuid6

    for step in SPECIMEN_STEPS:
        for made in (str(uuid6(clock_seq=step)), str(make_uuid6(SPECIMEN_TIMES[0], step, 0xABCDEF))):
            group = made.split("-")[3]
            got = call_answer(decode_step, made, what="decode_step(checkpoint_id)",
                              case=f"an ID whose 4th group is {group}")
            expect_type(got, int, "the step")
            if got == step:
                continue
            if step == -1 and got == 0x3FFF:
                raise Fail("for the 4th group bfff you returned 16383: 0x3FFF is how -1 (the input checkpoint of a "
                           "thread's first run) is stored; return -1 for it")
            if step >= 0x2000 and got == step - 0x4000:
                raise Fail(f"for a real step {step} (4th group {group}) you returned {got}: steps are never below -1, "
                           "so only 0x3FFF means -1; read every other value as the step itself")
            if got == (0x8000 | (step & 0x3FFF)) or got == int(group, 16):
                raise Fail(f"for the 4th group {group} you returned {got}: mask off the variant bits with & 0x3FFF")
            raise Fail(f"for an ID with step {step} (4th group {group}) you returned {got}; "
                       "read the 4th dash-separated group, it holds the variant bits plus clock_seq")
    return "steps decoded from the 4th group, including -1 for bfff"


@exercise("04.2")
def check_minted_at(minted_at):
    from helpers.checkpoint_ids import GREGORIAN_TO_UNIX_100NS, make_uuid6, to_datetime

    for when in SPECIMEN_TIMES:
        made = make_uuid6(when, 3, 0x123456)
        got = call_answer(minted_at, str(made), what="minted_at(checkpoint_id)",
                          case=f"an ID minted at {when.isoformat()}")
        expect_type(got, datetime, "the moment the ID was minted")
        aware = got if got.tzinfo is not None else got.replace(tzinfo=UTC)
        if abs(aware - when) <= timedelta(microseconds=1):
            continue
        if abs(aware - to_datetime(made.time)) <= timedelta(microseconds=1):
            raise Fail("that is uuid.UUID(...).time, which reads the v1 layout; reassemble time_high (first 32 bits), "
                       "time_mid (next 16) and time_low (12 bits after the version digit)")
        epoch_gap = timedelta(microseconds=GREGORIAN_TO_UNIX_100NS // 10)
        if min(abs(aware - (when + epoch_gap)), abs(aware - (when - epoch_gap))) <= timedelta(seconds=1):
            raise Fail("your date is off by 1582 -> 1970: the count starts at 1582-10-15 UTC, not at the Unix epoch")
        raise Fail(f"for an ID minted at {when.isoformat()} you returned {got.isoformat()}; the timestamp counts "
                   "100-ns units (divide by 10 for microseconds) since 1582-10-15 UTC")
    return "v6 timestamps decoded correctly"


def _guard_fixture() -> dict[str, Any]:
    """Two users' conversations on one saver: real, foreign and invented checkpoint IDs."""
    from langgraph.checkpoint.base.id import uuid6
    from langgraph.checkpoint.memory import InMemorySaver

    from helpers import travel_graphs

    saver = InMemorySaver()
    graph = travel_graphs.build_chat_graph(saver)
    conversations = {"c-ana": {"user_id": "ana", "thread_id": "t-7f3a"},
                     "c-bo": {"user_id": "bo", "thread_id": "t-19c2"}}
    for row in conversations.values():
        travel_graphs.say(graph, row["thread_id"], "I prefer a window seat")
    ids = {c: [s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(
        {"configurable": {"thread_id": row["thread_id"]}})] for c, row in conversations.items()}
    return {"saver": saver, "conversations": conversations, "real": ids["c-ana"][1], "foreign": ids["c-bo"][0],
            "invented": str(uuid6(clock_seq=1))}


WHAT = "checked_config(saver, conversations, user_id, conversation_id, checkpoint_id)"


def _refused(checked_config: Any, fixture: dict[str, Any], user_id: str, conversation_id: str, checkpoint_id: str,
             error: type[Exception], case: str, hint: str) -> None:
    try:
        got = call_answer(checked_config, fixture["saver"], dict(fixture["conversations"]), user_id, conversation_id,
                          checkpoint_id, what=WHAT)
    except (Fail, NotAttempted):
        raise
    except error:
        return
    except Exception as exc:
        raise Fail(f"for {case} you raised {type(exc).__name__}; raise {error.__name__} there") from None
    if got is None:
        raise Fail(f"for {case} you returned None; raise {error.__name__} instead, "
                   "so the caller cannot go on by mistake")
    raise Fail(f"for {case} you returned a config; {hint}")


@exercise("04.3")
def check_checked_config(checked_config):
    fixture = _guard_fixture()
    try:
        got = call_answer(checked_config, fixture["saver"], dict(fixture["conversations"]), "ana", "c-ana",
                          fixture["real"], what=WHAT)
    except (Fail, NotAttempted):
        raise
    except Exception as exc:
        raise Fail(f"for a real checkpoint of Ana's own conversation you raised {type(exc).__name__}: {exc}; "
                   "a stored checkpoint of a conversation the caller owns must give back its config") from None
    expect_type(got, dict, "the invoke config")
    inner = got.get("configurable")
    thread = inner.get("thread_id") if isinstance(inner, dict) else None
    if thread == "c-ana":
        raise Fail("you used the conversation id as the thread id; look the thread up in "
                   "conversations[conversation_id]['thread_id']")
    if thread != "t-7f3a" or inner.get("checkpoint_id") != fixture["real"]:
        raise Fail("return {'configurable': {'thread_id': conversations[conversation_id]['thread_id'], "
                   "'checkpoint_id': checkpoint_id}} for a stored checkpoint of the caller's conversation")
    _refused(checked_config, fixture, "bo", "c-ana", fixture["real"], PermissionError,
             "Bo asking for Ana's conversation", "that checkpoint exists, but the conversation is not Bo's: check "
             "conversations[conversation_id]['user_id'] against user_id before anything else")
    _refused(checked_config, fixture, "ana", "c-nobody", fixture["real"], PermissionError, "an unknown conversation",
             "refuse it with PermissionError, the same error as for another user's conversation")
    _refused(checked_config, fixture, "ana", "c-ana", fixture["invented"], LookupError,
             "an invented (well-formed uuid6) ID", "a well-formed ID can still be invented: ask the saver with "
             "saver.get_tuple(config)")
    _refused(checked_config, fixture, "ana", "c-ana", fixture["foreign"], LookupError, "an ID from Bo's thread",
             "that ID exists, but in another thread: look it up with this conversation's thread_id in the config, "
             "not across all threads")
    return "owned conversations only; invented and foreign checkpoint IDs are refused with LookupError"
