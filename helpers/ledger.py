"""A small SQLite command ledger: exactly-once acceptance, leased delivery, per-thread FIFO.

The ledger sits *in front of* a LangGraph graph. It decides which client requests become a
run, hands each accepted command to a dispatcher, and remembers the result, so a network
retry never starts a second run and a "regenerate" (a new command) always does. Chapter 11
shows :data:`SCHEMA` and :func:`submit_command` in cells; the rest is plumbing around them.

Public API (everything is importable from here; parts live in ``helpers.ledger_ids``,
``helpers.ledger_records``, ``helpers.ledger_connections`` and ``helpers.ledger_delivery``;
``helpers.ledger_service`` puts it in front of a graph and runs dispatcher processes)::

    new_command_id() / new_time_ordered_id() / stable_id(ns, name) / run_id_for(tenant, command)
    validate_id(field, value) / canonical_json(value) / fingerprint(value) / payload_json(value)

    Ledger(path, *, timeout=10.0, lease_seconds=30.0, max_attempts=3, synchronous="FULL",
           clock=time.time, crash_at=None, name=None, max_idle=4)      # a context manager
        create_conversation / get_conversation / submit / get_command / list_commands / list_runs
        claim / renew / release / record_result / dispatch_pending / deliver / pending_count
    Heartbeat(ledger, delivery, every) / run_dispatcher(ledger, handle, ...) / ManualClock

Guarantees, as the tests in ``tests/helpers/test_ledger*.py`` check them
-----------------------------------------------------------------------
* **Acceptance is exactly once.** ``commands`` is UNIQUE on ``(tenant_id, command_id)``.
  ``submit`` accepts with one ``INSERT ... SELECT ... ON CONFLICT DO NOTHING`` statement
  (one transaction: it finds the caller's conversation on its thread and inserts, or does
  nothing if the key exists; ``rowcount`` says which and ``lastrowid`` is the new ``seq``,
  so nothing is read back): an accepted command costs that one statement and its commit,
  which usually writes two pages (the row and its key, as a bare keyed insert does; more
  when a page splits), and only a call that inserted nothing reads the stored row. Needs
  SQLite >= 3.24. A ``Ledger`` reads a conversation's thread once (``create_conversation``,
  ``get_conversation`` or the first ``submit`` there) and keeps it; a conversation changed
  since (another thread, or gone) matches no insert and is read again (at most 3 times,
  then a ``LedgerError`` says that nothing was accepted and retrying is safe). ``created_at`` is
  when the call began (UTC, to the second) and ``seq`` the order of acceptance, so under
  contention a later ``seq`` can carry an earlier ``created_at``.
  The command row is its own outbox entry (its delivery columns and two partial indexes):
  the insert that accepts a command makes it pending, and the next ``claim`` puts it in
  its thread's queue (``ready`` goes from NULL to 1 or 0), in ``seq`` order.
  Same key + same payload returns the stored record (``created=False``); same key + another
  payload or conversation raises ``PayloadMismatch`` and writes nothing. 16 threads racing
  one key (sharing a ``Ledger`` or each with its own): one ``created=True``, one row, one
  delivery.
* **Same refusal for unknown and foreign conversations** (``ConversationNotFound``, a
  ``Forbidden``); callers never pass a ``thread_id``, it is minted here (uuid4). IDs must be
  exactly ``str`` (``type(x) is str``), 1..128 characters of ``[A-Za-z0-9._:-]``; every value
  is a bound parameter.
* **Delivery is at least once, under a lease with a fencing token.** ``claim`` leases the
  oldest pending command of a thread (per-thread FIFO by ``seq``) for ``lease_seconds`` and
  increments its ``attempt``. Every later write for that delivery (``renew``, ``release``,
  ``record_result``) carries ``AND attempt = ?``: once a newer attempt exists, a stale
  worker's renew returns False, its release changes nothing and its ``record_result`` raises
  ``StaleLease``. A result recorded by the current attempt is final; recording it again is
  a no-op that returns the stored record.
* **The lease's assumption:** a run finishes, or renews its lease, before the lease ends.
  ``deliver``/``dispatch_pending`` run a :class:`Heartbeat` that renews every
  ``lease_seconds / 3``, so a slow run keeps its command; a dispatcher that dies stops
  renewing, and another one claims the command once the lease has ended. Leases compare
  ``clock()`` values written by different dispatchers: their clocks must agree to well
  within a lease.
* **Poison commands end as ``dead``.** A handler that raises releases the lease with its
  error; a lease that ends without a result counts too. After ``max_attempts`` deliveries
  the command becomes ``dead`` with its last error, and the thread's queue moves on to its
  next command (the documented policy: a dead command does not block its conversation).
* **Exactly-once effect needs a deduplicating receiver.** Every delivery of a command
  carries the same ``run_id`` (the ledger's run ID, uuid5 of tenant/command); the receiver
  must dedupe on it. The ledger cannot make a model call or an airline hold happen once.
* **Operational errors.** A database that stays locked for ``timeout`` seconds raises
  ``LedgerBusy`` (a ``LedgerError``); the failed call changed nothing, so retrying it is
  safe. Opening honours the same timeout, including the switch to WAL, so many processes
  can open a new file at once. The schema version lives in ``PRAGMA user_version``;
  another version (or an unversioned file with tables) raises ``SchemaVersionError`` and
  leaves the file untouched. Connections are pooled (at most ``max_idle`` kept open), so
  short-lived threads leave no connections behind; ``close()`` closes them all.
* **Claims use indexes:** ``commands_claim`` holds only the heads of the queues, so a claim
  costs the same with 2,000 or 20,000 commands queued behind a running one. Queueing newly
  accepted commands is paid once per command, by the first claim after them, at the same
  cost per command for 2,000 or 18,000 of them (1–3 µs each on a 2-core VM).

Crash points for ``crash_at`` (``CRASH_POINTS``): ``before_commit`` / ``after_commit`` (in
``submit``), ``after_claim`` / ``after_deliver`` (in ``deliver``), ``before_mark_done`` /
``after_mark_done`` (in ``record_result``). "before" points roll back the open transaction,
as a process dying there would. A simulated crash also ends the leases this object holds
(as if ``lease_seconds`` had passed), so a restarted ``Ledger`` on the same file can
redeliver at once.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from helpers.ledger_connections import ConnectionPool, CrashAtCommit
from helpers.ledger_delivery import DeliveryMixin, Heartbeat, ManualClock, run_dispatcher
from helpers.ledger_ids import (
    MAX_ID_LENGTH,
    RUN_NAMESPACE,
    canonical_json,
    fingerprint,
    new_command_id,
    new_time_ordered_id,
    payload_json,
    run_id_for,
    stable_id,
    validate_id,
)
from helpers.ledger_records import (
    CommandNotFound,
    CommandRecord,
    Completed,
    Conversation,
    ConversationNotFound,
    Delivery,
    Forbidden,
    InvalidId,
    InvalidPayload,
    LedgerBusy,
    LedgerError,
    PayloadMismatch,
    RunRecord,
    SchemaVersionError,
    SimulatedCrash,
    StaleLease,
    SubmitResult,
)

__all__ = [
    "COMMAND_COLUMNS", "CRASH_POINTS", "MAX_ID_LENGTH", "MIN_SQLITE", "RUN_NAMESPACE", "SCHEMA", "SCHEMA_VERSION",
    "CommandNotFound", "CommandRecord", "Completed", "Conversation", "ConversationNotFound", "Delivery",
    "Forbidden", "Heartbeat", "InvalidId", "InvalidPayload", "Ledger", "LedgerBusy", "LedgerError",
    "ManualClock", "PayloadMismatch", "RunRecord", "SchemaVersionError", "SimulatedCrash", "StaleLease",
    "SubmitResult", "canonical_json", "fingerprint", "new_command_id", "new_time_ordered_id", "payload_json",
    "run_dispatcher", "run_id_for", "stable_id", "submit_command", "utc_now", "validate_id",
]

CRASH_POINTS = ("before_commit", "after_commit", "after_claim", "after_deliver",
                "before_mark_done", "after_mark_done")
SCHEMA_VERSION = 4  # 1: no version stored; 2: a separate outbox; 3: queued by submit; 4: by a claim
MIN_SQLITE = (3, 24, 0)  # INSERT ... ON CONFLICT DO NOTHING (upsert)

# shown in solutions/11_command_ledger.ipynb
SCHEMA = """
CREATE TABLE conversations (
    tenant_id       TEXT NOT NULL,
    conversation_id TEXT NOT NULL,               -- the client's name for the chat
    thread_id       TEXT NOT NULL UNIQUE,        -- minted here (uuid4), never sent by a caller
    created_at      TEXT NOT NULL,
    PRIMARY KEY (tenant_id, conversation_id));

CREATE TABLE commands (
    seq             INTEGER PRIMARY KEY,         -- the order of acceptance (only grows: never deleted)
    tenant_id       TEXT NOT NULL,
    command_id      TEXT NOT NULL,               -- the client's idempotency key
    conversation_id TEXT NOT NULL,
    thread_id       TEXT NOT NULL,
    run_id          TEXT NOT NULL,               -- uuid5 of tenant/command: one per command
    fingerprint     TEXT NOT NULL,               -- sha256 of the canonical payload
    payload         TEXT NOT NULL,               -- the JSON as the client sent it
    status          TEXT NOT NULL DEFAULT 'accepted'
                    CHECK (status IN ('accepted', 'running', 'done', 'failed', 'dead')),
    result          TEXT,
    error           TEXT,                        -- the last failed attempt's error
    created_at      TEXT NOT NULL,
    -- the outbox: a command is pending delivery while its status is accepted or running
    ready           INTEGER,                     -- NULL: not in its thread's queue yet, 1: the head, 0: behind it
    attempt         INTEGER NOT NULL DEFAULT 0,  -- the fencing token of the current lease
    lease_owner     TEXT,
    lease_expires   REAL NOT NULL DEFAULT 0,     -- 0 = not leased
    UNIQUE (tenant_id, command_id),              -- the race for a key is decided here
    FOREIGN KEY (tenant_id, conversation_id) REFERENCES conversations (tenant_id, conversation_id));
CREATE INDEX commands_queue ON commands (thread_id, seq)
    WHERE status IN ('accepted', 'running') AND ready IS NOT NULL;
CREATE INDEX commands_claim ON commands (lease_expires, seq)
    WHERE status IN ('accepted', 'running') AND ready = 1;

CREATE TABLE runs (
    run_id              TEXT NOT NULL,
    attempt             INTEGER NOT NULL,
    command_seq         INTEGER NOT NULL REFERENCES commands (seq),
    dispatcher          TEXT NOT NULL,
    started_at          TEXT NOT NULL,
    start_checkpoint_id TEXT,                    -- the thread's head when the run began
    end_checkpoint_id   TEXT,                    -- the head the run left behind
    outcome             TEXT,                    -- done, failed, error, dead (NULL: running or lost)
    PRIMARY KEY (run_id, attempt));

CREATE TABLE queue_cursor (                      -- one row: how far the dispatchers have queued
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    queued_through  INTEGER NOT NULL);           -- every command with seq <= this is in its queue
INSERT INTO queue_cursor VALUES (1, 0);
"""

COMMAND_COLUMNS = ("seq, tenant_id, command_id, conversation_id, thread_id, run_id, fingerprint, payload, "
                   "status, result, error, created_at")


# shown in solutions/11_command_ledger.ipynb
def submit_command(conn: sqlite3.Connection, tenant_id: str, command_id: str, conversation_id: str, thread_id: str,
                   payload: str, fingerprint: str, run_id: str, created_at: str) -> tuple[tuple | None, bool]:
    """Accept a command at most once; return (the stored command row, created).

    The INSERT is one statement, so on an autocommit connection (as the ledger's are) one
    transaction: it inserts the command unless the key exists, and only if the tenant has
    this conversation on this thread. ``rowcount`` says whether it inserted and ``lastrowid``
    is the new ``seq``; the rest of the new row is what the caller passed, so nothing is read
    back. It writes the row and its key and nothing else: the next claim puts the command in
    its thread's queue. A call that inserted nothing checks the conversation and, if it
    matches, reads the stored row. The row is None when the tenant has no such conversation
    (on that thread).
    """
    cursor = conn.execute(
        "INSERT INTO commands (tenant_id, command_id, conversation_id, thread_id, run_id, fingerprint, payload,"
        " created_at)"
        " SELECT tenant_id, ?, conversation_id, thread_id, ?, ?, ?, ?"
        " FROM conversations WHERE tenant_id = ? AND conversation_id = ? AND thread_id = ?"
        " ON CONFLICT (tenant_id, command_id) DO NOTHING",
        (command_id, run_id, fingerprint, payload, created_at, tenant_id, conversation_id, thread_id))
    if cursor.rowcount == 1:  # only the call that inserted changed a row: created is decided by the insert itself
        return (cursor.lastrowid, tenant_id, command_id, conversation_id, thread_id, run_id, fingerprint, payload,
                "accepted", None, None, created_at), True
    if conn.execute("SELECT 1 FROM conversations WHERE tenant_id = ? AND conversation_id = ? AND thread_id = ?",
                    (tenant_id, conversation_id, thread_id)).fetchone() is None:
        return None, False
    stored = conn.execute(
        "SELECT seq, tenant_id, command_id, conversation_id, thread_id, run_id, fingerprint, payload,"
        " status, result, error, created_at FROM commands WHERE tenant_id = ? AND command_id = ?",
        (tenant_id, command_id)).fetchone()
    return stored, False


_DECODER = json.JSONDecoder()
MAX_KEPT_THREADS = 10_000  # conversations whose thread a Ledger keeps; more, and it starts again
MAX_THREAD_READS = 3  # fresh reads of a conversation's thread that one submit may need


_this_second = (-1, "")  # (a second, its text): one tuple, so threads swap it whole


def utc_now() -> str:
    """Now in UTC, as SQLite's ``datetime('now')`` writes it (formatted once per second)."""
    global _this_second
    second = int(time.time())
    if second != _this_second[0]:
        _this_second = (second, time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(second)))
    return _this_second[1]


def _record(row: tuple) -> CommandRecord:
    # raw_decode: the ledger wrote this JSON itself, so there is no whitespace around it for
    # json.loads to strip (two regex passes that every submit would pay for).
    seq, tenant_id, command_id, conversation_id, thread_id, run_id, digest, payload, status, result, error, \
        created_at = row
    return CommandRecord(seq, tenant_id, command_id, conversation_id, thread_id, run_id, digest,
                         _DECODER.raw_decode(payload)[0], status,
                         None if result is None else _DECODER.raw_decode(result)[0], error, created_at)


class Ledger(DeliveryMixin):
    """A command ledger on one SQLite file (WAL mode). Safe to share between threads."""

    def __init__(self, path: str | Path, *, timeout: float = 10.0, lease_seconds: float = 30.0,
                 max_attempts: int = 3, synchronous: str = "FULL", clock: Callable[[], float] = time.time,
                 crash_at: str | None = None, name: str | None = None, max_idle: int = 4) -> None:
        if sqlite3.sqlite_version_info < MIN_SQLITE:
            raise LedgerError(f"the ledger needs SQLite {'.'.join(map(str, MIN_SQLITE))} or newer (for INSERT ... "
                              f"ON CONFLICT DO NOTHING); this Python uses SQLite {sqlite3.sqlite_version}: "
                              "use a newer Python build")
        if crash_at is not None and crash_at not in CRASH_POINTS:
            raise ValueError(f"unknown crash point {crash_at!r}; choose from {CRASH_POINTS}")
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"bad synchronous level {synchronous!r}")
        if max_attempts < 1 or lease_seconds <= 0:
            raise ValueError("max_attempts must be >= 1 and lease_seconds > 0")
        self.path, self.timeout, self.lease_seconds = str(path), timeout, lease_seconds
        self.max_attempts, self.clock, self.crash_at = max_attempts, clock, crash_at
        self.name = name or f"ledger-{uuid.uuid4().hex[:8]}"  # tags the leases and runs this object takes
        self._pool = ConnectionPool(self.path, timeout=timeout, synchronous=synchronous.upper(), max_idle=max_idle)
        self._threads: dict[tuple[str, str], str] = {}  # (tenant, conversation) -> its thread, as last read
        self._renewed = threading.Condition()
        self.renewals = 0  # successful renew() calls of this object (demos wait on it)
        pool, deadline = self._pool, time.monotonic() + timeout
        conn = pool.until(deadline, pool.get)
        try:
            pool.until(deadline, lambda: self._check_version(conn))  # read-only: refuse before writing
            pool.until(deadline, lambda: conn.execute("PRAGMA journal_mode=WAL").fetchone())
            pool.until(deadline, lambda: self._create_or_check_schema(conn))
        except BaseException:
            pool.discard(conn)
            raise
        pool.put(conn)

    # ----------------------------------------------------------------- connections
    def _using(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._pool.using()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        # BEGIN IMMEDIATE takes the write lock up front, so two writers never both read a
        # snapshot and then fail to upgrade it (SQLITE_BUSY in the middle of a transaction).
        with self._using() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, SimulatedCrash):
                    self._expire_own_leases()
                raise

    def _check_version(self, conn: sqlite3.Connection) -> int:
        """The file's schema version; ``SchemaVersionError`` if this code cannot use it."""
        # One statement, so one snapshot: read apart, another process could create the
        # schema between the two reads, and a brand-new ledger would look like a foreign file.
        version, tables = conn.execute(
            "SELECT (SELECT user_version FROM pragma_user_version), (SELECT COUNT(*) FROM sqlite_master)").fetchone()
        if version == 0 and tables:
            raise SchemaVersionError(
                f"{self.path} has tables but no schema version: a ledger from before schema versions, or "
                f"another database; this code needs version {SCHEMA_VERSION}: use a new file")
        if version not in (0, SCHEMA_VERSION):
            raise SchemaVersionError(f"{self.path} holds ledger schema version {version}; this code needs "
                                     f"version {SCHEMA_VERSION}")
        return version

    def _create_or_check_schema(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if self._check_version(conn) == 0:  # checked again: another process may have just created it
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")  # an int constant
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _crash(self, point: str, *, in_transaction: bool = False) -> None:
        if self.crash_at == point:
            if not in_transaction:  # inside one, _write does this after its ROLLBACK
                self._expire_own_leases()
            raise SimulatedCrash(point)

    def _expire_own_leases(self) -> None:
        # A simulated crash also fast-forwards the clock past this object's leases, so a
        # "restarted" Ledger recovers at once instead of waiting lease_seconds. A real
        # crash leaves the leases to run out on their own.
        with self._using() as conn:
            conn.execute("UPDATE commands SET lease_expires = 0 WHERE lease_owner = ? "
                         "AND status IN ('accepted', 'running')",
                         (self.name,))

    def close(self) -> None:
        """Close every connection this object opened (connections in use close when returned)."""
        self._pool.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- conversations
    def create_conversation(self, tenant_id: str, conversation_id: str) -> Conversation:
        """Create (or return the existing) conversation and its server-minted thread_id."""
        validate_id("tenant_id", tenant_id)
        validate_id("conversation_id", conversation_id)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO conversations (tenant_id, conversation_id, thread_id, created_at) "
                "VALUES (?, ?, ?, datetime('now')) ON CONFLICT (tenant_id, conversation_id) DO NOTHING",
                (tenant_id, conversation_id, str(uuid.uuid4())))
            return self._keep(self._conversation(conn, tenant_id, conversation_id))

    def get_conversation(self, tenant_id: str, conversation_id: str) -> Conversation:
        """The caller's conversation, or ``ConversationNotFound``."""
        validate_id("tenant_id", tenant_id)
        validate_id("conversation_id", conversation_id)
        with self._using() as conn:
            return self._keep(self._conversation(conn, tenant_id, conversation_id))

    def _thread_of(self, tenant_id: str, conversation_id: str) -> str:
        """Read the conversation's thread (``ConversationNotFound`` if none), kept for ``submit``."""
        return self.get_conversation(tenant_id, conversation_id).thread_id

    def _keep(self, conversation: Conversation) -> Conversation:
        if len(self._threads) >= MAX_KEPT_THREADS:
            self._threads.clear()
        self._threads[conversation.tenant_id, conversation.conversation_id] = conversation.thread_id
        return conversation

    @staticmethod
    def _conversation(conn: sqlite3.Connection, tenant_id: str, conversation_id: str) -> Conversation:
        row = conn.execute(
            "SELECT tenant_id, conversation_id, thread_id, created_at FROM conversations "
            "WHERE tenant_id = ? AND conversation_id = ?", (tenant_id, conversation_id)).fetchone()
        if row is None:
            raise ConversationNotFound(
                f"conversation {conversation_id!r} not found for tenant {tenant_id!r} "
                "(it does not exist or belongs to another tenant)")
        return Conversation(*row)

    # ----------------------------------------------------------------- commands
    def submit(self, tenant_id: str, command_id: str, conversation_id: str, payload: Any) -> SubmitResult:
        """Accept a command once. Retries with the same key and payload get the same record."""
        validate_id("tenant_id", tenant_id)
        validate_id("command_id", command_id)
        validate_id("conversation_id", conversation_id)
        body, digest = payload_json(payload)
        run_id, known = run_id_for(tenant_id, command_id), (tenant_id, conversation_id)
        thread_id = self._threads.get(known) or self._thread_of(tenant_id, conversation_id)
        # The thread kept from an earlier read saves a statement. If the conversation has
        # changed since (gone, or another thread), the insert matches nothing: read it again
        # (ConversationNotFound if it is gone) and retry, a few times at most.
        for _ in range(MAX_THREAD_READS + 1):
            with self._using() as conn:
                target: Any = CrashAtCommit(conn) if self.crash_at == "before_commit" else conn
                row, created = submit_command(target, tenant_id, command_id, conversation_id, thread_id, body, digest,
                                              run_id, utc_now())
            if row is not None:
                break
            self._threads.pop(known, None)
            thread_id = self._thread_of(tenant_id, conversation_id)
        else:
            raise LedgerError(f"conversation {conversation_id!r} of tenant {tenant_id!r} changed its thread "
                              f"{MAX_THREAD_READS} times during this call; nothing was accepted, retrying is safe")
        record = _record(row)
        if not created:  # a created row holds exactly what this call sent
            if record.conversation_id != conversation_id:
                raise PayloadMismatch(tenant_id, command_id, f"conversation {record.conversation_id!r}")
            if record.fingerprint != digest:
                raise PayloadMismatch(tenant_id, command_id,
                                      f"a different payload (stored {record.fingerprint[:12]}, got {digest[:12]})")
        if self.crash_at is not None:
            self._crash("after_commit")
        return SubmitResult(record=record, created=created)

    def get_command(self, tenant_id: str, command_id: str) -> CommandRecord:
        """The stored command, or ``CommandNotFound``."""
        validate_id("tenant_id", tenant_id)
        validate_id("command_id", command_id)
        with self._using() as conn:
            row = conn.execute(f"SELECT {COMMAND_COLUMNS} FROM commands WHERE tenant_id = ? AND command_id = ?",
                               (tenant_id, command_id)).fetchone()
        if row is None:
            raise CommandNotFound(f"no command {command_id!r} for tenant {tenant_id!r}")
        return _record(row)

    def _command_by_seq(self, conn: sqlite3.Connection, seq: int) -> CommandRecord:
        row = conn.execute(f"SELECT {COMMAND_COLUMNS} FROM commands WHERE seq = ?", (seq,)).fetchone()
        if row is None:
            raise CommandNotFound(f"no command with seq {seq}")
        return _record(row)

    def list_commands(self, tenant_id: str, conversation_id: str) -> list[CommandRecord]:
        """All commands of the caller's conversation, oldest first."""
        conv = self.get_conversation(tenant_id, conversation_id)
        with self._using() as conn:
            rows = conn.execute(f"SELECT {COMMAND_COLUMNS} FROM commands WHERE tenant_id = ? AND thread_id = ? "
                                "ORDER BY seq", (tenant_id, conv.thread_id)).fetchall()
        return [_record(row) for row in rows]

    def list_runs(self, tenant_id: str, conversation_id: str) -> list[RunRecord]:
        """Every delivery attempt of the conversation's commands, in command then attempt order."""
        conv = self.get_conversation(tenant_id, conversation_id)
        with self._using() as conn:
            rows = conn.execute(
                "SELECT r.run_id, r.attempt, c.command_id, r.dispatcher, r.start_checkpoint_id, "
                "r.end_checkpoint_id, r.outcome FROM runs AS r JOIN commands AS c ON c.seq = r.command_seq "
                "WHERE c.tenant_id = ? AND c.thread_id = ? ORDER BY c.seq, r.attempt",
                (tenant_id, conv.thread_id)).fetchall()
        return [RunRecord(*row) for row in rows]
