"""A small SQLite command ledger: exactly-once acceptance, outbox dispatch, per-thread FIFO.

The ledger sits *in front of* a LangGraph graph. It decides which client requests become a
run, hands each accepted command to a worker, and remembers the result, so a network
retry never starts a second run and a "regenerate" always does.

Public API
----------
IDs (all return ``str``)::

    new_command_id()                  # uuid4: one per new user intent
    new_time_ordered_id()             # uuid7: index-friendly, still unique (not an order!)
    stable_id(namespace, name)        # uuid5: the same inputs always give the same id
    validate_id(field, value) -> str  # raises InvalidId; 1..128 chars of [A-Za-z0-9._:-]
    canonical_json(value, *, label="payload") -> str  # sorted keys, no spaces, NFC, no NaN/inf
    fingerprint(value) -> str         # sha256 hex of canonical_json(value)

``Ledger(path, *, timeout=10.0, lease_seconds=30.0, crash_at=None, synchronous="FULL")``
(a context manager; ``close()`` closes every connection it opened)::

    create_conversation(tenant_id, conversation_id) -> Conversation   # idempotent
    get_conversation(tenant_id, conversation_id) -> Conversation
    submit(tenant_id, command_id, conversation_id, payload) -> SubmitResult
    get_command(tenant_id, command_id) -> CommandRecord
    list_commands(tenant_id, conversation_id) -> list[CommandRecord]  # in seq order
    dispatch_pending(deliver, *, limit=None) -> list[Delivery]
    record_result(tenant_id, command_id, result, *, status="done") -> CommandRecord

Data classes: ``Conversation``, ``CommandRecord``, ``SubmitResult(record, created)``,
``Delivery`` (with ``idempotency_key == run_id``).
Errors: ``LedgerError`` > ``InvalidId``, ``InvalidPayload``, ``PayloadMismatch``,
``Forbidden`` > ``ConversationNotFound``, ``CommandNotFound``. ``SimulatedCrash`` is a
``BaseException`` (like ``SystemExit``) so that ``except Exception`` cannot swallow it.

Guarantees, stated honestly
---------------------------
* **Acceptance is exactly once.** ``commands`` is UNIQUE on ``(tenant_id, command_id)``;
  ``submit`` runs ``INSERT ... ON CONFLICT DO NOTHING`` and *then* reads the row, inside
  one ``BEGIN IMMEDIATE`` transaction. It never checks first and inserts later. Same key +
  same payload returns the stored record (``created=False``); same key + different payload
  (or another conversation) raises ``PayloadMismatch``.
* **Delivery is at least once.** The outbox row is written in the same transaction as the
  command, so an accepted command cannot be forgotten. ``dispatch_pending`` leases the
  row, calls ``deliver`` and renews the lease; the row stays pending until
  ``record_result`` closes it. A crash anywhere before that (dispatcher or worker) means
  the command is delivered again once the lease (``lease_seconds``, which should exceed
  the longest run) has expired, e.g. by a restarted process.
* **Exactly-once effect = at-least-once delivery + idempotent receiver.** Each delivery
  carries ``run_id = stable_id(RUN_NAMESPACE, "<tenant>/<command>")``; the receiver must
  dedupe on it (e.g. use it as its own unique key), and ``record_result`` is idempotent
  (the first result wins). The ledger alone cannot make an external side effect happen once.
* **Per-thread FIFO.** Only the oldest unfinished command of a thread (lowest ``seq``) may
  be dispatched; later ones stay ``accepted`` until it is recorded ``done``/``failed``.
  ``seq`` is an AUTOINCREMENT column: strictly increasing, not gap-free. UUIDs (even v7)
  are never used for ordering.
* **Tenant safety.** Callers never pass a ``thread_id``: it is minted here and resolved from
  ``(tenant_id, conversation_id)``. Every id is validated; every value is a bound parameter.

Crash points for ``crash_at`` (see ``CRASH_POINTS``): ``before_commit`` / ``after_commit``
(in ``submit``), ``after_claim`` / ``after_deliver`` (in ``dispatch_pending``),
``before_mark_done`` / ``after_mark_done`` (in ``record_result``). "before" points roll
back the open transaction, exactly like a process dying there. A simulated crash also
expires the leases this object holds (as if ``lease_seconds`` had passed), so a restart
can redeliver at once: close the object and open a new ``Ledger`` on the same file.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
import threading
import time
import unicodedata
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

try:  # Python 3.14+ has uuid7 in the standard library.
    from uuid import uuid7 as _uuid7  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - depends on the interpreter
    from uuid6 import uuid7 as _uuid7

__all__ = [
    "CRASH_POINTS", "RUN_NAMESPACE", "CommandNotFound", "CommandRecord", "Conversation",
    "ConversationNotFound", "Delivery", "Forbidden", "InvalidId", "InvalidPayload", "Ledger",
    "LedgerError", "PayloadMismatch", "SimulatedCrash", "SubmitResult", "canonical_json",
    "fingerprint", "new_command_id", "new_time_ordered_id", "stable_id", "validate_id",
]

CRASH_POINTS = ("before_commit", "after_commit", "after_claim", "after_deliver",
                "before_mark_done", "after_mark_done")
RUN_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "urn:langgraph-persistence-course:ledger:run")
MAX_ID_LENGTH = 128
MAX_PAYLOAD_DEPTH = 64
_ID_RE = re.compile(r"[A-Za-z0-9._:-]+")
Status = Literal["accepted", "running", "done", "failed"]


# --------------------------------------------------------------------------- errors
class LedgerError(Exception):
    """Base class of every error the ledger raises on purpose."""


class InvalidId(LedgerError, ValueError):
    """An ID is not a str of 1..128 characters from ``[A-Za-z0-9._:-]``."""

    def __init__(self, field: str, reason: str) -> None:
        self.field, self.reason = field, reason
        super().__init__(f"invalid {field}: {reason}")


class InvalidPayload(LedgerError, ValueError):
    """A payload or result cannot be turned into canonical JSON."""


class PayloadMismatch(LedgerError):
    """The command id was already accepted with another payload or conversation."""

    def __init__(self, tenant_id: str, command_id: str, detail: str) -> None:
        self.tenant_id, self.command_id = tenant_id, command_id
        super().__init__(
            f"command {command_id!r} of tenant {tenant_id!r} was already accepted with "
            f"{detail}; a retry must resend the same request, a new intent needs a new command id")


class Forbidden(LedgerError):
    """The caller may not act on the resource it named."""


class ConversationNotFound(Forbidden, LookupError):
    """No conversation with this id *for this tenant*.

    Raised both for unknown ids and for another tenant's conversation: answering
    differently would let a caller probe which ids other tenants use.
    """


class CommandNotFound(LedgerError, LookupError):
    """No command with this (tenant_id, command_id)."""


class SimulatedCrash(BaseException):
    """Raised at an injected crash point. A BaseException, so it is never swallowed."""

    def __init__(self, point: str) -> None:
        self.point = point
        super().__init__(f"simulated crash at {point!r}")


# --------------------------------------------------------------------------- ids & json
def new_command_id() -> str:
    """A fresh random command id (uuid4). Create one per new intent, reuse it on retry."""
    return str(uuid.uuid4())


def new_time_ordered_id() -> str:
    """A uuid7 (millisecond time prefix): good index locality, but not a strict order."""
    return str(_uuid7())


def stable_id(namespace: uuid.UUID | str, name: str) -> str:
    """A deterministic uuid5: the same namespace and name always give the same id."""
    ns = namespace if isinstance(namespace, uuid.UUID) else uuid.UUID(str(namespace))
    return str(uuid.uuid5(ns, name))


def _clip(text: str, limit: int = 40) -> str:
    # Never echo a huge hostile value back into logs or error pages.
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} chars)"


def validate_id(field: str, value: object) -> str:
    """Return ``value`` if it is a valid ID, else raise ``InvalidId`` naming the field."""
    if not isinstance(value, str):
        raise InvalidId(field, f"must be a str, got {type(value).__name__}")
    if not value:
        raise InvalidId(field, "must not be empty")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidId(field, f"{len(value)} chars, at most {MAX_ID_LENGTH} allowed: {_clip(value)}")
    if "\x00" in value:
        raise InvalidId(field, f"contains a NUL character: {_clip(value)}")
    if not _ID_RE.fullmatch(value):
        bad = sorted({c for c in value if not _ID_RE.fullmatch(c)})[:5]
        raise InvalidId(field, f"only [A-Za-z0-9._:-] allowed, found {''.join(bad)!r} in {_clip(value)}")
    return value


def _normalise(value: Any, path: str, depth: int) -> Any:
    if depth > MAX_PAYLOAD_DEPTH:
        raise InvalidPayload(f"{path}: nested deeper than {MAX_PAYLOAD_DEPTH} levels")
    if value is None or isinstance(value, (bool, str, int, float)):
        if isinstance(value, str):
            return unicodedata.normalize("NFC", value)
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidPayload(f"{path}: {value!r} is not allowed in JSON")
        return value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidPayload(f"{path}: keys must be str, got {type(key).__name__}")
            nkey = unicodedata.normalize("NFC", key)
            if nkey in out:  # e.g. NFC and NFD spellings of one key in the same object
                raise InvalidPayload(f"{path}: duplicate key {_clip(nkey)} after NFC normalisation")
            out[nkey] = _normalise(item, f"{path}[{_clip(nkey, 20)}]", depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [_normalise(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value)]
    raise InvalidPayload(f"{path}: {type(value).__name__} is not a JSON type")


def canonical_json(value: Any, *, label: str = "payload") -> str:
    """Canonical JSON: sorted keys, no whitespace, raw unicode in NFC, no NaN/inf.

    Raises ``InvalidPayload`` (its message starts with ``label``) for non-JSON values,
    non-str keys, keys that collide after NFC, lone surrogates and nesting over 64 levels.
    ``1`` and ``1.0`` stay different (as their JSON text differs).
    """
    try:
        text = json.dumps(_normalise(value, label, 0), sort_keys=True,
                          separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")  # rejects lone surrogates, which have no UTF-8 form
    except (ValueError, UnicodeEncodeError) as exc:
        if isinstance(exc, InvalidPayload):
            raise
        raise InvalidPayload(f"{label}: cannot encode as canonical JSON: {exc}") from None
    return text


def fingerprint(value: Any) -> str:
    """sha256 hex digest of ``canonical_json(value)``."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


# --------------------------------------------------------------------------- records
@dataclass(frozen=True)
class Conversation:
    tenant_id: str
    conversation_id: str
    thread_id: str  # opaque, minted by the server; pass it to LangGraph's config
    created_at: str


@dataclass(frozen=True)
class CommandRecord:
    seq: int  # ledger-wide order of acceptance
    tenant_id: str
    command_id: str
    conversation_id: str
    thread_id: str
    run_id: str  # deterministic: stable_id(RUN_NAMESPACE, f"{tenant_id}/{command_id}")
    fingerprint: str
    payload: Any
    status: Status
    result: Any
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class SubmitResult:
    record: CommandRecord
    created: bool  # True only for the one call that inserted the command

    @property
    def result(self) -> Any:
        return self.record.result


@dataclass(frozen=True)
class Delivery:
    """One message handed to a worker. May arrive more than once: dedupe on run_id."""

    outbox_id: int
    attempt: int
    seq: int
    tenant_id: str
    command_id: str
    conversation_id: str
    thread_id: str
    run_id: str
    payload: Any

    @property
    def idempotency_key(self) -> str:
        return self.run_id


_SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    tenant_id TEXT NOT NULL, conversation_id TEXT NOT NULL,
    thread_id TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, conversation_id));
CREATE TABLE IF NOT EXISTS commands (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id TEXT NOT NULL, command_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL, thread_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL, payload TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('accepted', 'running', 'done', 'failed')),
    run_id TEXT NOT NULL UNIQUE, result TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    UNIQUE (tenant_id, command_id),
    FOREIGN KEY (tenant_id, conversation_id) REFERENCES conversations (tenant_id, conversation_id));
CREATE INDEX IF NOT EXISTS commands_open ON commands (thread_id, seq)
    WHERE status IN ('accepted', 'running');
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    command_seq INTEGER NOT NULL UNIQUE REFERENCES commands (seq),
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done')),
    attempts INTEGER NOT NULL DEFAULT 0, lease_owner TEXT, lease_expires REAL,
    last_error TEXT,
    created_at TEXT NOT NULL, delivered_at TEXT);
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (seq) WHERE status = 'pending';
"""

# Only these constant column lists are ever formatted into SQL; values are always bound.
_COMMAND_COLS = ("seq, tenant_id, command_id, conversation_id, thread_id, run_id, fingerprint, "
                 "payload, status, result, created_at, updated_at")

# The head of a thread is its oldest unfinished command; only heads may be dispatched.
_CLAIMABLE = f"""
SELECT o.seq, o.attempts, {', '.join('c.' + c for c in _COMMAND_COLS.split(', '))}
FROM outbox AS o JOIN commands AS c ON c.seq = o.command_seq
WHERE o.status = 'pending' AND c.status IN ('accepted', 'running')
  AND (o.lease_expires IS NULL OR o.lease_expires <= ?)
  AND c.seq = (SELECT MIN(h.seq) FROM commands AS h
               WHERE h.thread_id = c.thread_id AND h.status IN ('accepted', 'running'))
ORDER BY o.seq LIMIT ?"""


def _record(row: tuple) -> CommandRecord:
    values = list(row)
    values[7] = json.loads(values[7])
    values[9] = None if values[9] is None else json.loads(values[9])
    return CommandRecord(*values)


class Ledger:
    """A command ledger on one SQLite file (WAL mode). Safe to share between threads."""

    def __init__(self, path: str | Path, *, timeout: float = 10.0, lease_seconds: float = 30.0,
                 crash_at: str | None = None, synchronous: str = "FULL") -> None:
        if crash_at is not None and crash_at not in CRASH_POINTS:
            raise ValueError(f"unknown crash point {crash_at!r}; choose from {CRASH_POINTS}")
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"bad synchronous level {synchronous!r}")
        self.path, self.timeout, self.lease_seconds = str(path), timeout, lease_seconds
        self.crash_at, self._synchronous = crash_at, synchronous.upper()
        self._local = threading.local()  # one connection per Python thread
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._closed = False
        self._owner = str(uuid.uuid4())  # tags the leases this object takes
        conn = self._conn()
        conn.execute("PRAGMA journal_mode=WAL")  # readers never block the single writer
        with self._write() as c:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    c.execute(statement)

    # ----------------------------------------------------------------- plumbing
    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise LedgerError("ledger is closed")
        conn = getattr(self._local, "conn", None)
        if conn is None:
            # timeout= is SQLite's busy timeout. isolation_level=None: we issue BEGIN and
            # COMMIT ourselves. check_same_thread is off only so close() can close it; each
            # connection is still used by one thread.
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None,
                                   check_same_thread=False)
            # PRAGMAs cannot take parameters; the level is checked against a fixed list.
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
            conn.execute("PRAGMA foreign_keys = ON")
            self._local.conn = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        # BEGIN IMMEDIATE takes the write lock up front, so two writers never both read
        # a snapshot and then fail to upgrade (SQLITE_BUSY mid-transaction).
        conn = self._conn()
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

    def _crash(self, point: str) -> None:
        if self.crash_at != point:
            return
        if not self._conn().in_transaction:  # inside one, _write does this after ROLLBACK
            self._expire_own_leases()
        raise SimulatedCrash(point)

    def _expire_own_leases(self) -> None:
        # A simulated crash also fast-forwards the clock past this object's leases, so a
        # "restarted" Ledger recovers at once instead of waiting lease_seconds. A real
        # crash leaves the leases to expire on their own.
        with self._write() as conn:
            conn.execute("UPDATE outbox SET lease_expires = 0 "
                         "WHERE lease_owner = ? AND status = 'pending'", (self._owner,))

    def close(self) -> None:
        """Close every connection this object opened (from any thread)."""
        with self._conns_lock:
            self._closed = True
            for conn in self._conns:
                conn.close()
            self._conns.clear()

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
                "VALUES (?, ?, ?, ?) ON CONFLICT (tenant_id, conversation_id) DO NOTHING",
                (tenant_id, conversation_id, str(uuid.uuid4()), _now()))
            return self._conversation(conn, tenant_id, conversation_id)

    def get_conversation(self, tenant_id: str, conversation_id: str) -> Conversation:
        """The caller's conversation, or ``ConversationNotFound``."""
        validate_id("tenant_id", tenant_id)
        validate_id("conversation_id", conversation_id)
        return self._conversation(self._conn(), tenant_id, conversation_id)

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
    def submit(self, tenant_id: str, command_id: str, conversation_id: str,
               payload: Any) -> SubmitResult:
        """Accept a command once. Retries with the same key and payload get the same record."""
        validate_id("tenant_id", tenant_id)
        validate_id("command_id", command_id)
        validate_id("conversation_id", conversation_id)
        body = canonical_json(payload)
        digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
        run_id = stable_id(RUN_NAMESPACE, f"{tenant_id}/{command_id}")  # '/' is not an id char
        with self._write() as conn:
            thread_id = self._conversation(conn, tenant_id, conversation_id).thread_id
            now = _now()
            cur = conn.execute(
                "INSERT INTO commands (tenant_id, command_id, conversation_id, thread_id, "
                "fingerprint, payload, status, run_id, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, 'accepted', ?, ?, ?) "
                "ON CONFLICT (tenant_id, command_id) DO NOTHING",
                (tenant_id, command_id, conversation_id, thread_id, digest, body, run_id, now, now))
            created = cur.rowcount == 1
            if created:  # the outbox row commits (or rolls back) together with the command
                conn.execute("INSERT INTO outbox (command_seq, created_at) VALUES (?, ?)",
                             (cur.lastrowid, now))
            record = self._command(conn, tenant_id, command_id)
            if record.conversation_id != conversation_id:
                raise PayloadMismatch(tenant_id, command_id,
                                      f"conversation {record.conversation_id!r}")
            if record.fingerprint != digest:
                raise PayloadMismatch(tenant_id, command_id, f"a different payload "
                                      f"(stored {record.fingerprint[:12]}, got {digest[:12]})")
            self._crash("before_commit")
        self._crash("after_commit")
        return SubmitResult(record=record, created=created)

    def get_command(self, tenant_id: str, command_id: str) -> CommandRecord:
        """The stored command, or ``CommandNotFound``."""
        validate_id("tenant_id", tenant_id)
        validate_id("command_id", command_id)
        return self._command(self._conn(), tenant_id, command_id)

    @staticmethod
    def _command(conn: sqlite3.Connection, tenant_id: str, command_id: str) -> CommandRecord:
        row = conn.execute(f"SELECT {_COMMAND_COLS} FROM commands "
                           "WHERE tenant_id = ? AND command_id = ?", (tenant_id, command_id)).fetchone()
        if row is None:
            raise CommandNotFound(f"no command {command_id!r} for tenant {tenant_id!r}")
        return _record(row)

    def list_commands(self, tenant_id: str, conversation_id: str) -> list[CommandRecord]:
        """All commands of the caller's conversation, oldest first."""
        conv = self.get_conversation(tenant_id, conversation_id)
        rows = self._conn().execute(
            f"SELECT {_COMMAND_COLS} FROM commands WHERE tenant_id = ? AND thread_id = ? "
            "ORDER BY seq", (tenant_id, conv.thread_id)).fetchall()
        return [_record(row) for row in rows]

    # ----------------------------------------------------------------- dispatch
    def dispatch_pending(self, deliver: Callable[[Delivery], object], *,
                         limit: int | None = None) -> list[Delivery]:
        """Deliver every eligible command (the head of each thread), oldest first.

        A row is leased before ``deliver`` runs, so concurrent dispatchers never hand it out
        twice while the lease lasts. After ``deliver`` returns the lease is renewed: it now
        waits for ``record_result``; if no result arrives before it expires, the command is
        delivered again. If ``deliver`` raises an ``Exception`` the lease is released at once.
        A row is handed out at most once per call. Returns the successful deliveries.
        """
        delivered: list[Delivery] = []
        handled: set[int] = set()  # outbox ids already tried in this call
        while limit is None or len(delivered) < limit:
            item = self._claim_next(handled)
            if item is None:
                break
            handled.add(item.outbox_id)
            self._crash("after_claim")
            try:
                deliver(item)
            except Exception as exc:  # a receiver error, not a crash: retry later
                self._release(item, exc)
                continue
            self._crash("after_deliver")
            with self._write() as conn:  # the lease now bounds the wait for record_result
                conn.execute("UPDATE outbox SET delivered_at = ?, lease_expires = ?, "
                             "lease_owner = ? WHERE seq = ? AND status = 'pending'",
                             (_now(), time.time() + self.lease_seconds, self._owner,
                              item.outbox_id))
            delivered.append(item)
        return delivered

    def _claim_next(self, skip: set[int]) -> Delivery | None:
        # One row per claim, so a lease starts right before its own delivery.
        with self._write() as conn:
            rows = conn.execute(_CLAIMABLE, (time.time(), len(skip) + 1)).fetchall()
            rows = [r for r in rows if r[0] not in skip]
            if not rows:
                return None
            outbox_id, attempts, *command = rows[0]
            conn.execute("UPDATE outbox SET attempts = attempts + 1, lease_expires = ?, "
                         "lease_owner = ? WHERE seq = ?",
                         (time.time() + self.lease_seconds, self._owner, outbox_id))
            conn.execute("UPDATE commands SET status = 'running', updated_at = ? WHERE seq = ?",
                         (_now(), command[0]))
            rec = _record(tuple(command))
            return Delivery(outbox_id, attempts + 1, rec.seq, rec.tenant_id, rec.command_id,
                            rec.conversation_id, rec.thread_id, rec.run_id, rec.payload)

    def _release(self, item: Delivery, exc: Exception) -> None:
        with self._write() as conn:
            conn.execute("UPDATE outbox SET lease_expires = NULL, last_error = ? WHERE seq = ?",
                         (f"{type(exc).__name__}: {exc}"[:500], item.outbox_id))
            conn.execute("UPDATE commands SET status = 'accepted', updated_at = ? "
                         "WHERE seq = ? AND status = 'running'", (_now(), item.seq))

    def record_result(self, tenant_id: str, command_id: str, result: Any, *,
                      status: Literal["done", "failed"] = "done") -> CommandRecord:
        """Finish a command. Idempotent: once done/failed, later calls change nothing.

        Finishing a command also closes its outbox row and unblocks the next command on
        the same thread.
        """
        validate_id("tenant_id", tenant_id)
        validate_id("command_id", command_id)
        if status not in ("done", "failed"):
            raise ValueError(f"status must be 'done' or 'failed', not {status!r}")
        body = canonical_json(result, label="result")
        with self._write() as conn:
            record = self._command(conn, tenant_id, command_id)
            if record.status in ("accepted", "running"):
                conn.execute("UPDATE commands SET status = ?, result = ?, updated_at = ? "
                             "WHERE seq = ? AND status IN ('accepted', 'running')",
                             (status, body, _now(), record.seq))
                conn.execute("UPDATE outbox SET status = 'done', lease_expires = NULL "
                             "WHERE command_seq = ? AND status = 'pending'", (record.seq,))
                record = self._command(conn, tenant_id, command_id)
            self._crash("before_mark_done")
        self._crash("after_mark_done")
        return record
