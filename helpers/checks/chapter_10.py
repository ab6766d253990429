"""Checks for chapter 10 (business IDs)."""

from __future__ import annotations

import tempfile
import uuid
from typing import Any

from .protocol import Fail, NotAttempted, call_answer, exercise, expect_type


def _expect_labels(answer: dict, name: str, expected: dict, allowed, hints: dict, *, missing: str) -> None:
    """Every key present, every label one of ``allowed``, and right, else the key's hint."""
    absent = sorted(set(expected) - set(answer))
    if absent:
        raise Fail(f"missing {missing}: {', '.join(absent)}")
    for key, want in expected.items():
        got = answer[key]
        if got not in allowed:
            raise Fail(f"{name}[{key!r}] is {got!r}, not one of {', '.join(map(repr, allowed))}")
        if got != want and not (isinstance(want, frozenset) and got in want):
            hint = hints[key]
            if isinstance(hint, dict):  # a hint per wrong label, "*" for the others
                hint = hint.get(got, hint["*"])
            raise Fail(f"{name}[{key!r}] is {got!r}: {hint}")


# ----------------------------------------------------------------------------- 10.1
SPLIT_DECISIONS: dict[str, Any] = {
    "user/conversation": frozenset({"split: cardinality", "split: lifetime"}),
    "order/payment, one charge": "share",
    "message/command, no regenerate": "share",
    "command/operation, two seats": "split: cardinality",
    "conversation/thread, state expires": "split: lifetime",
}
DECISIONS = ("share", "split: lifetime", "split: cardinality")
_SPLIT_HINTS = {
    "user/conversation": "one user has many conversations, and a deleted chat leaves the user: split",
    "order/payment, one charge": ("ask both questions: the payment record is deleted with its order, and an order "
                                  "is charged exactly once, so neither outlives the other and neither has many of "
                                  "the other. Two 'no's share one value: the order ID can key its charge"),
    "message/command, no regenerate": ("with no Regenerate and no edit, each message is sent as exactly one intent, "
                                       "and a retry resends the same message: two 'no's, so the message ID can "
                                       "serve as the command ID"),
    "command/operation, two seats": ("one command, two effects at the airline: if both holds shared one key, the "
                                     "airline would drop the second as a duplicate. Which question does 'two "
                                     "effects of one command' answer?"),
    "conversation/thread, state expires": ("the chat outlives its graph state: when Ana writes again, the "
                                           "conversation needs a new thread. Which question is about one thing "
                                           "living on when the other is deleted?"),
}


@exercise("10.1")
def check_split_decisions(decisions):
    expect_type(decisions, dict, "pair -> 'share', 'split: lifetime' or 'split: cardinality'")
    _expect_labels(decisions, "decisions", SPLIT_DECISIONS, DECISIONS, _SPLIT_HINTS, missing="pair(s) in decisions")
    return "two 'no's share one value; a 'yes' to lifetime or cardinality splits"


# ----------------------------------------------------------------------------- 10.2
SCENARIO_KINDS = {
    "timeout": "retry", "double_click": "retry", "offline": "retry",
    "regenerate": "regenerate", "same_words": "new message",
}
KINDS = ("retry", "regenerate", "new message")
ID_NAMES = ("conversation_id", "thread_id", "message_id", "command_id", "run_id", "request_id")
NEW_IDS = {
    "retry": {"request_id"},
    "regenerate": {"command_id", "run_id", "request_id"},
    "new message": {"message_id", "command_id", "run_id", "request_id"},
}
_SCENARIO_HINTS = {
    "timeout": "the answer was lost, not the intent: the app resends the same command",
    "double_click": "both sends carry the command id minted when Send was pressed: the second is a retry",
    "offline": ("the first send failed, and the app sends the same command again, with the IDs it minted when "
                "Ana pressed Send: a retry"),
    "regenerate": "the user asks for another answer to the same message: a regenerate",
    "same_words": "same words, but a new intent the user typed: a new message (deduplicate on ids, never on text)",
}


@exercise("10.2")
def check_request_kinds(kinds, new_ids):
    expect_type(kinds, dict, "scenario -> 'retry' / 'regenerate' / 'new message'")
    _expect_labels(kinds, "kinds", SCENARIO_KINDS, KINDS, _SCENARIO_HINTS, missing="scenario(s) in kinds")
    expect_type(new_ids, dict, "kind -> set of IDs that get a new value")
    for kind in KINDS:
        if kind not in new_ids:
            raise Fail(f"new_ids has no entry for {kind!r}")
        got = new_ids[kind]
        if isinstance(got, str) or not isinstance(got, (set, frozenset, list, tuple)):
            raise Fail(f"new_ids[{kind!r}] should be a set of ID names like {{'request_id'}}, got {type(got).__name__}")
        got = set(got)
        unknown = sorted(got - set(ID_NAMES))
        if unknown:
            raise Fail(f"new_ids[{kind!r}] has unknown name(s) {unknown}; use names from {', '.join(ID_NAMES)}")
        want = NEW_IDS[kind]
        if got & {"conversation_id", "thread_id"}:
            raise Fail(f"new_ids[{kind!r}] changes the conversation or thread: all three continue the same "
                       "conversation and thread (a regenerate forks inside the thread, chapter 09)")
        if kind == "retry" and "command_id" in got:
            raise Fail("a retry reuses the command id: that is how the server recognises it and returns the "
                       "stored answer")
        if kind == "retry" and "run_id" in got:
            raise Fail("a retried request starts no second run: the command is the same, and the server answers "
                       "from the run an earlier attempt started (or says it is still running); if no earlier "
                       "attempt arrived, this one starts the command's only run")
        if "request_id" not in got:
            raise Fail(f"new_ids[{kind!r}] misses request_id: every HTTP attempt gets a fresh one "
                       "(it answers 'which network request?')")
        if kind == "regenerate" and "message_id" in got:
            raise Fail("a regenerate answers the same user message again: its message_id stays")
        if kind != "retry" and not {"command_id", "run_id"} <= got:
            raise Fail(f"a {kind} is a new intent: it needs a new command_id, and the backend executes it, "
                       "so a new run_id")
        if got != want:
            raise Fail(f"new_ids[{kind!r}] is {sorted(got)}; think again about which user message it answers")
    return "retries keep the command, regenerates keep the message, new messages change both"


# ----------------------------------------------------------------------------- 10.3
ID_KINDS = {
    "share_link_id": "uuid4", "leg_operation_id": "uuid5", "log_event_id": "uuid7",
    "event_time": "timestamp column", "turn_number": "sequence", "task_id": "runtime",
}
CHOICES = ("uuid4", "uuid5", "uuid7", "sequence", "runtime", "timestamp column")
_KIND_HINTS = {
    "share_link_id": {
        "uuid5": ("a uuid5 of a 6-letter booking reference is as guessable as the reference: anyone can hash "
                  "their guesses too (the hashed thread IDs of 'The tenant boundary'). Which kind is all random?"),
        "uuid7": ("a uuid7 begins with the millisecond it was made, which the link must not tell. Which kind is "
                  "all random?"),
        "*": "anyone who has the link may open the itinerary, so nobody may guess it: which kind is all random?",
    },
    "leg_operation_id": ("the second delivery must come up with the same key with nothing stored: a random ID "
                         "would differ. Which kind is computed again from its inputs (the command and the leg)?"),
    "log_event_id": ("each worker mints its keys alone (no shared database to ask, so no shared sequence), fast, "
                     "and new keys should land at the end of its file's index: which kind sorts by creation in "
                     "its process?"),
    "event_time": {
        "uuid7": ("at 5,000 a second a process mints more than one uuid7 per millisecond, so each gets the previous "
                  "one's millisecond + 1: the burst in 'uuid4, uuid5, uuid7, prefixes and format limits' ended at "
                  "least a second ahead of the clock, and at a steady 5,000 a second the lead grows by 4 s every "
                  "second. A uuid7 keeps sort order, not the time"),
        "*": "a time you will read back is a value, not an ID: which choice is no ID at all?",
    },
    "turn_number": ("two devices in the same second: a uuid7's time comes from each device's clock (or runs ahead "
                    "of it), which is not an order between writers. Let one place assign the order"),
    "task_id": "the runtime mints task IDs itself (chapter 06); you read them, never mint them: 'runtime'",
}


@exercise("10.3")
def check_id_kinds(choice):
    expect_type(choice, dict, "need -> one of " + ", ".join(CHOICES))
    _expect_labels(choice, "choice", ID_KINDS, CHOICES, _KIND_HINTS, missing="need(s)")
    return ("uuid4 where nothing may be guessed, uuid5 for keys recomputed from IDs, uuid7 for index locality, a "
            "column for a time, a sequence for order")


# ----------------------------------------------------------------------------- 10.4
_CRASH_SEEN: list[Any] = []  # what hold_outbound saw before and after one real crash (cached)
_CRASH_COMMAND = "7d0c2b4e-93f1-4a6e-8a57-0f3c1d2e4b6a"


def _crash_observations() -> tuple[str, Any, Any]:
    """(command ID, ExecutionInfo before a real crash, ExecutionInfo on redelivery), once per process."""
    from helpers import business_ids

    if not _CRASH_SEEN:
        with tempfile.TemporaryDirectory(prefix="course-10-check-") as tmp:
            before, after = business_ids.crash_inside_hold(tmp, _CRASH_COMMAND)
        _CRASH_SEEN.extend([_CRASH_COMMAND, before, after])
    return _CRASH_SEEN[0], _CRASH_SEEN[1], _CRASH_SEEN[2]


def _keys(log: list[dict[str, Any]], node: str) -> list[Any]:
    return [row["key"] for row in log if row["node"] == node]


def _call(func: Any, *args: Any, what: str, case: str) -> Any:
    try:
        return call_answer(func, *args, what=what)
    except (Fail, NotAttempted):
        raise
    except Exception as exc:
        raise Fail(f"your function raised {type(exc).__name__} on {case}: {exc}") from None


@exercise("10.4")
def check_hold_key(hold_key):
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.runtime import ExecutionInfo

    from helpers import business_ids

    what = "hold_key(command_id, effect, info)"
    k1, k2 = str(uuid.uuid4()), str(uuid.uuid4())
    # First on a hand-made ExecutionInfo, outside any graph: a stub, a wrong type or an
    # error is reported here, and never raised inside a node.
    sample = ExecutionInfo(checkpoint_id="1f0-sample", checkpoint_ns="", task_id="task-sample", thread_id="trip-0",
                           run_id="run-sample")
    got = _call(hold_key, k1, "hold_outbound", sample, what=what, case="one call")
    expect_type(got, str, "the idempotency key")
    if not got:
        raise Fail("the key is empty: the airline needs a non-empty idempotency key")
    if _call(hold_key, k1, "hold_outbound", sample, what=what, case="a second call") != got:
        raise Fail("two calls with the same inputs gave two different keys: a random part (uuid4?) changes on every "
                   "call, so a retry after a timeout would hold a second seat. Derive the key from its inputs")
    errors: list[str] = []

    def key_fn(command_id: str, effect: str, info: Any) -> Any:
        try:
            return hold_key(command_id, effect, info)
        except Exception as exc:  # reported after the run, never raised in a node
            errors.append(f"{type(exc).__name__}: {exc}")
            return None

    def run(graph: CompiledStateGraph, command_id: str, case: str) -> None:
        config = {"configurable": {"thread_id": "trip-1", "command_id": command_id}, "run_id": uuid.uuid4()}
        graph.invoke({"holds": []}, config)
        if errors:
            raise Fail(f"hold_key failed on {case}: {errors[0]}")

    # 1. A RetryPolicy retry, with the return hold in the same super-step.
    log: list[dict[str, Any]] = []
    graph = business_ids.build_hold_graph(InMemorySaver(), key_fn, log, fail={"hold_outbound": 1})
    run(graph, k1, "a retried node")
    outbound, back = _keys(log, "hold_outbound"), _keys(log, "hold_return")
    if len(set(outbound)) != 1:
        raise Fail("the key changed between attempt 1 and attempt 2 of the same hold: leave node_attempt (and "
                   "anything else that changes per attempt) out of the key, or the airline holds twice")
    if outbound[0] == back[0]:
        raise Fail("hold_outbound and hold_return, two effects of one command, got the same key: the airline would "
                   "drop the second hold as a duplicate. The key must also say which effect it is for")
    # 2. A regenerate: a new command on the same thread.
    log.clear()
    run(graph, k2, "a new command")
    if _keys(log, "hold_outbound")[0] == outbound[0]:
        raise Fail("a new command (Ana pressed Regenerate) got the same key as the first command's hold, so the "
                   "airline would answer with the old hold. The key must change with the command")
    # 3. A real crash inside the node, in a child process, under the default durability.
    crash_command, before, after = _crash_observations()
    if _call(hold_key, crash_command, "hold_outbound", before, what=what, case="the run that crashed") != \
            _call(hold_key, crash_command, "hold_outbound", after, what=what, case="the redelivered run"):
        changed = sorted(f for f in ("checkpoint_id", "task_id", "run_id")
                         if getattr(before, f) != getattr(after, f))
        raise Fail("after a real crash (os._exit inside the node, default durability) the redelivered run got "
                   f"another key, so the seat would be held twice. Between the two runs these changed: "
                   f"{', '.join(changed)}. A task is planned from a checkpoint, and this one had not been saved "
                   "when the process died; LangGraph's run_id is one per invocation. Which of your inputs is "
                   "the same on every delivery of the command?")
    return "one key per command and effect: the same across a retry and a real crash, new for a new command"
