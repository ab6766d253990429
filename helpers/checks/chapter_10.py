"""Checks for chapter 10 (business IDs)."""

from __future__ import annotations

import tempfile
import uuid
from typing import Any

from .protocol import Fail, call_answer, exercise, expect_type

# ----------------------------------------------------------------------------- 10.2
SCENARIO_KINDS = {
    "timeout": "retry", "double_click": "retry", "reload": "retry",
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
    "reload": "the app resends the stored command with its command id: a retry",
    "regenerate": "the user asks for another answer to the same message: a regenerate",
    "same_words": "same words, but a new intent the user typed: a new message (deduplicate on ids, never on text)",
}


def _expect_labels(answer: dict, name: str, expected: dict, allowed, hints: dict, *, missing: str) -> None:
    """Every key present, every label one of ``allowed``, and right, else the key's hint."""
    absent = sorted(set(expected) - set(answer))
    if absent:
        raise Fail(f"missing {missing}: {', '.join(absent)}")
    for key, want in expected.items():
        got = answer[key]
        if got not in allowed:
            raise Fail(f"{name}[{key!r}] is {got!r}, not one of {', '.join(map(repr, allowed))}")
        if got != want:
            raise Fail(f"{name}[{key!r}] is {got!r}: {hints[key]}")


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
            raise Fail("a retry reuses the command id: that is how the ledger recognises it and returns the "
                       "stored answer")
        if kind == "retry" and "run_id" in got:
            raise Fail("a retry must not start a new run: the ledger's run_id is derived from (tenant, command), "
                       "and the command is the same")
        if "request_id" not in got:
            raise Fail(f"new_ids[{kind!r}] misses request_id: every HTTP attempt gets a fresh one "
                       "(it answers 'which network request?')")
        if kind == "regenerate" and "message_id" in got:
            raise Fail("a regenerate answers the same user message again: its message_id stays")
        if kind != "retry" and not {"command_id", "run_id"} <= got:
            raise Fail(f"a {kind} is a new intent: it needs a new command_id, and so a new run_id")
        if got != want:
            raise Fail(f"new_ids[{kind!r}] is {sorted(got)}; think again about which user message it answers")
    return "retries keep the command, regenerates keep the message, new messages change both"


# ----------------------------------------------------------------------------- 10.3
ID_KINDS = {
    "command_id": "uuid4", "run_id": "uuid5", "audit_event_id": "uuid7",
    "queue_position": "sequence", "checkpoint_id": "runtime",
}
CHOICES = ("uuid4", "uuid5", "uuid7", "sequence", "runtime")
_KIND_HINTS = {
    "command_id": "the client mints it with no coordination and it must be unguessable: random, uuid4",
    "run_id": ("it must come out the same when the command is delivered again, from (tenant, command): "
               "a name-based uuid5"),
    "audit_event_id": "new keys should land at the end of the index: a time-ordered uuid7",
    "queue_position": ("UUIDs, even uuid7, are not an order between concurrent writers; "
                       "let the database assign a sequence"),
    "checkpoint_id": "LangGraph mints checkpoint IDs itself (chapter 04); never mint them: 'runtime'",
}


@exercise("10.3")
def check_id_kinds(choice):
    expect_type(choice, dict, "need -> one of " + ", ".join(CHOICES))
    _expect_labels(choice, "choice", ID_KINDS, CHOICES, _KIND_HINTS, missing="need(s)")
    return "uuid4 for intents, uuid5 for derived ids, uuid7 for index-friendly keys, a sequence for order"


# ----------------------------------------------------------------------------- 10.4
_CRASH_SEEN: list[Any] = []  # what hold_outbound saw before and after one real crash (cached)


def _crash_observations() -> tuple[str, Any, Any]:
    """(ledger run ID, ExecutionInfo before a real crash, ExecutionInfo on redelivery), once per process."""
    from helpers import business_ids, ledger

    if not _CRASH_SEEN:
        run_id = ledger.run_id_for("acme", "cmd-crash")
        with tempfile.TemporaryDirectory(prefix="course-10-check-") as tmp:
            before, after = business_ids.crash_inside_hold(tmp, run_id)
        _CRASH_SEEN.extend([run_id, before, after])
    return _CRASH_SEEN[0], _CRASH_SEEN[1], _CRASH_SEEN[2]


def _keys(log: list[dict[str, Any]], node: str) -> list[Any]:
    return [row["key"] for row in log if row["node"] == node]


@exercise("10.4")
def check_hold_key(hold_key):
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.runtime import ExecutionInfo

    from helpers import business_ids, ledger

    what = "hold_key(ledger_run_id, effect, info)"
    k1, k2 = ledger.run_id_for("acme", "cmd-1"), ledger.run_id_for("acme", "cmd-2")
    # First on a hand-made ExecutionInfo, outside any graph: a stub, a wrong type or an
    # error is reported here, and never raised inside a node.
    sample = ExecutionInfo(checkpoint_id="1f0-sample", checkpoint_ns="", task_id="task-sample", thread_id="trip-0",
                           run_id="run-sample")
    got = call_answer(hold_key, k1, "hold_outbound", sample, what=what, case="one call")
    expect_type(got, str, "the idempotency key")
    if not got:
        raise Fail("the key is empty: the airline needs a non-empty idempotency key")
    if call_answer(hold_key, k1, "hold_outbound", sample, what=what, case="a second call") != got:
        raise Fail("two calls with the same inputs gave two different keys: a random part (uuid4?) changes on every "
                   "call, so a retry after a timeout would hold a second seat. Derive the key from its inputs")
    errors: list[str] = []

    def key_fn(ledger_run_id: str, effect: str, info: Any) -> Any:
        try:
            return hold_key(ledger_run_id, effect, info)
        except Exception as exc:  # reported after the run, never raised in a node
            errors.append(f"{type(exc).__name__}: {exc}")
            return None

    def run(graph: CompiledStateGraph, ledger_run_id: str, case: str) -> None:
        config = {"configurable": {"thread_id": "trip-1", "ledger_run_id": ledger_run_id}, "run_id": uuid.uuid4()}
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
                   "drop the second hold as a duplicate. Put the effect's name into the key")
    # 2. A regenerate: a new command, so a new ledger run ID, on the same thread.
    log.clear()
    run(graph, k2, "a new command")
    if _keys(log, "hold_outbound")[0] == outbound[0]:
        raise Fail("a new command (the user pressed Regenerate: command K2) got the same key as K1's hold, so the "
                   "airline would answer with K1's hold. The ledger's run ID is new for every command: build on it")
    # 3. A real crash inside the node, in a child process, under the default durability.
    crash_run_id, before, after = _crash_observations()
    if call_answer(hold_key, crash_run_id, "hold_outbound", before, what=what, case="the run that crashed") != \
            call_answer(hold_key, crash_run_id, "hold_outbound", after, what=what, case="the redelivered run"):
        raise Fail("after a real crash (os._exit inside the node, default durability) the redelivered run got "
                   "another key, so the seat would be held twice. The checkpoint the task was planned from had not "
                   "been saved, so task_id and checkpoint_id changed, and LangGraph's run_id is new for every "
                   "invocation. Build the key from the ledger's run ID and the effect: "
                   "uuid5(UUID(ledger_run_id), effect)")
    return "one key per command and effect: the same across a retry and a real crash, new for a new command"
