"""Checks for chapter 10 (business IDs and the command ledger)."""

from __future__ import annotations

import sqlite3
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

from .protocol import Fail, NotAttempted, call_answer, exercise, expect_type

# ----------------------------------------------------------------------------- 10.1
RACERS = 8
PAUSE_TIMEOUT = 0.5  # seconds a caller waits for the others at the gate (see _Gate)


def _call(func: Any, *args: Any, what: str, case: str) -> Any:
    try:
        return call_answer(func, *args, what=what)
    except (Fail, NotAttempted):
        raise
    except sqlite3.OperationalError as exc:
        formatted = ("syntax", "unrecognized token", "one statement")
        if "quote" in case and any(word in str(exc) for word in formatted):
            raise Fail(f"on {case} SQLite said {exc!r}: pass every value as a ? parameter "
                       "(conn.execute(sql, (tenant_id, command_id, fp))), never format it into the SQL") from None
        if "ON CONFLICT" in str(exc):
            raise Fail(f"on {case} SQLite said {exc!r}: the conflict target must be the table's key, "
                       "ON CONFLICT (tenant_id, command_id)") from None
        raise Fail(f"your function raised OperationalError on {case}: {exc}") from None
    except sqlite3.IntegrityError as exc:
        raise Fail(f"your function raised IntegrityError on {case} ({exc}): the key already exists; "
                   "use INSERT ... ON CONFLICT (tenant_id, command_id) DO NOTHING, then read the stored row") from None
    except Exception as exc:
        raise Fail(f"your function raised {type(exc).__name__} on {case}: {exc}") from None


def _pair(got: Any, case: str) -> tuple[Any, Any]:
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise Fail(f"on {case} you returned {got!r}; return a pair (stored_fingerprint, created)")
    stored, created = got
    expect_type(stored, str, f"the stored fingerprint, on {case}")
    if not isinstance(created, bool):
        raise Fail(f"on {case} 'created' is {created!r} ({type(created).__name__}); return a bool, "
                   "e.g. cursor.rowcount == 1 after the INSERT")
    return stored, created


class _Gate:
    """Holds every caller right after its first read until all callers have read.

    A check-then-insert implementation reads, finds nothing, and only then inserts: held
    at the gate, all callers read before anyone inserts, which is exactly the interleaving
    that breaks it. An insert-first implementation has already inserted when it reads,
    so holding it changes nothing. A caller that never reads passes the gate on return.
    """

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=PAUSE_TIMEOUT)

    def wait(self) -> None:
        try:
            self.barrier.wait()
        except threading.BrokenBarrierError:  # someone holds a lock or never came: go on
            pass


def _is_read(sql: Any) -> bool:
    text = str(sql).lstrip().upper()
    return text.startswith(("SELECT", "WITH")) and "INSERT" not in text


class _Cursor:
    def __init__(self, cursor: sqlite3.Cursor, owner: _GatedConnection) -> None:
        self._cursor, self._owner = cursor, owner

    def execute(self, sql: str, *args: Any) -> _Cursor:
        self._cursor.execute(sql, *args)
        self._owner._after(sql)
        return self

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)

    def __iter__(self):
        return iter(self._cursor)


class _GatedConnection:
    """A sqlite3 connection whose first read waits at a :class:`_Gate`."""

    def __init__(self, conn: sqlite3.Connection, gate: _Gate) -> None:
        self._conn, self._gate, self.passed = conn, gate, False

    def _after(self, sql: Any) -> None:
        if not self.passed and _is_read(sql):
            self.pass_gate()

    def pass_gate(self) -> None:
        if not self.passed:
            self.passed = True
            self._gate.wait()

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        cursor = self._conn.execute(sql, *args)
        self._after(sql)
        return cursor

    def cursor(self, *args: Any) -> _Cursor:
        return _Cursor(self._conn.cursor(*args), self)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def __enter__(self) -> Any:
        return self._conn.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self._conn.__exit__(*exc)


def _race(accept: Any, path: Path, key: str, fingerprints: list[str], *, gated: bool) -> list[Any]:
    from helpers.business_ids import open_commands_table

    n = len(fingerprints)
    start = threading.Barrier(n)
    gate = _Gate(n)
    results: list[Any] = [None] * n
    conns = [open_commands_table(path) for _ in range(n)]

    def worker(i: int) -> None:
        conn: Any = _GatedConnection(conns[i], gate) if gated else conns[i]
        try:
            start.wait(10)
            results[i] = accept(conn, "acme", key, fingerprints[i])
        except BaseException as exc:  # counted by the caller
            results[i] = exc
        finally:
            if gated:
                conn.pass_gate()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for conn in conns:
        conn.close()
    if any(t.is_alive() for t in threads):
        raise Fail("some concurrent calls never returned: do not keep a transaction open "
                   "(the connection autocommits each statement)")
    return results


def _judge_race(results: list[Any], fingerprints: list[str], rows: list[tuple], label: str) -> None:
    n = len(results)
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        first = errors[0]
        name = type(first).__name__
        if isinstance(first, sqlite3.IntegrityError):
            raise Fail(f"{label}: {len(errors)} of {n} concurrent callers raised IntegrityError. Your function "
                       "checks first and inserts later: all callers found no row, then all inserted. Insert first "
                       "(ON CONFLICT (tenant_id, command_id) DO NOTHING), then read the stored row")
        raise Fail(f"{label}: {len(errors)} of {n} concurrent callers raised {name}: {first}")
    pairs = [_pair(r, f"{label} (concurrent call)") for r in results]
    created = sum(1 for _, c in pairs if c)
    if len(rows) != 1:
        raise Fail(f"{label}: the table holds {len(rows)} rows for the key after {n} concurrent calls; expected 1")
    stored = rows[0][0]
    if created != 1:
        hint = ("your function decides 'created' from a check made before the insert: all callers checked, found "
                "nothing, and claimed the command. Decide it from the INSERT itself (cursor.rowcount == 1)"
                if created > 1 else "nobody claimed the command: 'created' must be True for the caller whose INSERT "
                "added the row (cursor.rowcount == 1)")
        raise Fail(f"{label}: {created} of {n} concurrent callers got created=True, expected exactly 1; {hint}")
    wrong = sorted({fp for fp, _ in pairs if fp != stored})
    if wrong:
        raise Fail(f"{label}: some callers got a fingerprint that is not the stored one; after the INSERT, SELECT the "
                   "fingerprint of (tenant_id, command_id) and return that, not the one passed in")
    winner = next(i for i, (_, c) in enumerate(pairs) if c)
    if fingerprints[winner] != stored:
        raise Fail(f"{label}: the caller that got created=True did not insert the stored row")


@exercise("10.1")
def check_accept(accept):
    from helpers.business_ids import open_commands_table

    if accept is ... or not callable(accept):
        call_answer(accept, what="accept(conn, tenant_id, command_id, payload_fingerprint)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "commands.db"
        conn = open_commands_table(path)
        try:
            what = "accept(conn, tenant_id, command_id, payload_fingerprint)"
            first = _pair(_call(accept, conn, "acme", "cmd-1", "fp-a", what=what, case="a new key"), "a new key")
            if first != ("fp-a", True):
                raise Fail(f"for a new key you returned {first!r}, expected ('fp-a', True)")
            again = _pair(_call(accept, conn, "acme", "cmd-1", "fp-a", what=what, case="a retry"), "a retry")
            if again[1]:
                raise Fail("a retry (same key, same fingerprint) got created=True; only the call whose INSERT added "
                           "the row may say True: use cursor.rowcount == 1 after INSERT ... ON CONFLICT DO NOTHING "
                           "(INSERT OR REPLACE and DO UPDATE rewrite the row, so they count as a change)")
            other = _pair(_call(accept, conn, "acme", "cmd-1", "fp-b", what=what,
                                case="the same key with another payload"), "the same key with another payload")
            stored = conn.execute("SELECT fingerprint FROM commands "
                                  "WHERE tenant_id = 'acme' AND command_id = 'cmd-1'").fetchall()
            if stored != [("fp-a",)]:
                raise Fail("the same key with another payload overwrote the stored command: use ON CONFLICT ... "
                           "DO NOTHING (not INSERT OR REPLACE or DO UPDATE), the first payload must win")
            if other != ("fp-a", False):
                raise Fail(f"the same key with another payload returned {other!r}, expected ('fp-a', False): "
                           "return the fingerprint read from the table, so the caller can see it differs from its own")
            tenant_b = _pair(_call(accept, conn, "globex", "cmd-1", "fp-c", what=what,
                                   case="the same command id in another tenant"), "another tenant")
            if tenant_b != ("fp-c", True):
                raise Fail(f"the same command id in another tenant returned {tenant_b!r}, expected ('fp-c', True): "
                           "the key is (tenant_id, command_id), filter the SELECT on both")
            quoted = _pair(_call(accept, conn, "acme", "it's-mine", "fp-q", what=what,
                                 case="a command id containing a quote"), "a command id containing a quote")
            if quoted != ("fp-q", True):
                raise Fail(f"a command id containing a quote returned {quoted!r}, expected ('fp-q', True)")
            count = conn.execute("SELECT COUNT(*) FROM commands").fetchone()[0]
            if count != 3:
                raise Fail(f"after 5 calls on 3 distinct keys the table holds {count} rows, expected 3")
        finally:
            conn.close()
        rounds = [("same payload", True, ["fp-same"] * RACERS), ("same payload", True, ["fp-same"] * RACERS),
                  ("different payloads", True, [f"fp-{i}" for i in range(RACERS)]),
                  ("same payload, no gate", False, ["fp-same"] * RACERS),
                  ("different payloads, no gate", False, [f"fp-{i}" for i in range(RACERS)])]
        for r, (name, gated, fps) in enumerate(rounds, 1):
            key = f"race-{r}"
            results = _race(accept, path, key, fps, gated=gated)
            with sqlite3.connect(path) as check_conn:
                rows = check_conn.execute("SELECT fingerprint FROM commands "
                                          "WHERE tenant_id = 'acme' AND command_id = ?",
                                          (key,)).fetchall()
            _judge_race(results, fps, rows, f"race {r} ({RACERS} threads, {name})")
    return (f"exactly one caller created each key in {len(rounds)} races of {RACERS} threads; "
            "retries and mismatches read the stored row")


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
    got = _call(hold_key, k1, "hold_outbound", sample, what=what, case="one call")
    expect_type(got, str, "the idempotency key")
    if not got:
        raise Fail("the key is empty: the airline needs a non-empty idempotency key")
    if _call(hold_key, k1, "hold_outbound", sample, what=what, case="a second call") != got:
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
    if _call(hold_key, crash_run_id, "hold_outbound", before, what=what, case="the run that crashed") != \
            _call(hold_key, crash_run_id, "hold_outbound", after, what=what, case="the redelivered run"):
        raise Fail("after a real crash (os._exit inside the node, default durability) the redelivered run got "
                   "another key, so the seat would be held twice. The checkpoint the task was planned from had not "
                   "been saved, so task_id and checkpoint_id changed, and LangGraph's run_id is new for every "
                   "invocation. Build the key from the ledger's run ID and the effect: "
                   "uuid5(UUID(ledger_run_id), effect)")
    return "one key per command and effect: the same across a retry and a real crash, new for a new command"
