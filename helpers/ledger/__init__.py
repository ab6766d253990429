"""A small SQLite command ledger: exactly-once acceptance, leased delivery, per-thread FIFO.

The ledger sits *in front of* a LangGraph graph. It decides which client requests become a
run, hands each accepted command to a dispatcher, and remembers the result, so a network
retry never starts a second run and a "regenerate" (a new command) always does. Chapter 11
builds its core in cells and saves it into this package (``# saved as
helpers.ledger.<module>.<name>``); ``from helpers import ledger`` gives every public name.

The package, along its seams::

    schema        SCHEMA (the tables), SCHEMA_VERSION, opening a file            (shown in 11)
    acceptance    submit_command, check_retry (shown in 11); Acceptance: conversations, submit, reads
    delivery      queue_new, next_head, lease, check_delivery, renew_lease, finish_command, bury,
                  release_lease, claim_next (shown in 11); Outbox, Heartbeat, run_dispatcher, ManualClock
    connections   Transactions (what both halves share), ConnectionPool, CrashAtCommit
    ids           ID validation, canonical JSON, fingerprints, minting IDs
    records       errors and dataclasses
    service       ChatService: the ledger in front of a chat graph; the receiver (shown in 11);
                  ``python -m helpers.ledger.service dispatch DIR`` (imported on its own: it loads LangGraph)
    experiments   races, crashes, leases and processes for chapter 11 (imported on its own)
    postgres_port what a PostgreSQL port must face, on a real server (the tests run it; needs psycopg)

Public API::

    new_command_id() / new_time_ordered_id() / stable_id(ns, name) / run_id_for(tenant, command)
    validate_id(field, value) / canonical_json(value) / fingerprint(value) / payload_json(value)

    Ledger(path, *, timeout=10.0, lease_seconds=30.0, max_attempts=3, synchronous="FULL",
           clock=time.time, crash_at=None, name=None, max_idle=4)      # a context manager
        create_conversation / get_conversation / submit / get_command / list_commands / list_runs
        claim / renew / release / record_result / dispatch_pending / deliver / pending_count
        .tx (Transactions), .acceptance (Acceptance), .outbox (Outbox): the parts it joins
    Heartbeat(outbox, delivery, every) / run_dispatcher(ledger, handle, ...) / ManualClock

Guarantees, as the tests in ``tests/helpers/test_ledger*.py`` check them
-----------------------------------------------------------------------
* **Acceptance is exactly once.** ``commands`` is UNIQUE on ``(tenant_id, command_id)``;
  ``submit`` inserts first (one ``INSERT ... SELECT ... ON CONFLICT DO NOTHING``, see
  :mod:`helpers.ledger.acceptance`). Same key + same payload returns the stored record
  (``created=False``); same key + another payload or conversation raises
  ``PayloadMismatch`` and writes nothing. 16 threads racing one key (sharing a ``Ledger``
  or each with its own): one ``created=True``, one row, one delivery. The command row is
  its own outbox entry: the insert that accepts a command makes it pending.
* **Durable once acknowledged, with ``synchronous="FULL"``** (the default here and in
  ``ChatService``): in WAL mode each commit syncs the log before ``submit`` returns, so an
  accepted command survives a power cut or an OS crash, not only a killed process. With
  ``"NORMAL"`` the last commits before a power cut or an OS crash can be lost (the file
  stays consistent) although the client was told "accepted"; a killed process still loses
  nothing.
* **Same refusal for unknown and foreign conversations** (``ConversationNotFound``, a
  ``Forbidden``); callers never pass a ``thread_id``, it is minted here (uuid4). IDs must be
  exactly ``str`` (``type(x) is str``), 1..128 characters of ``[A-Za-z0-9._:-]``; every value
  is a bound parameter.
* **Delivery is at least once, under a lease with a fencing token.** ``claim`` leases the
  oldest pending command of a thread (per-thread FIFO by ``seq``) for ``lease_seconds`` and
  increments its ``attempt``. Every later write for that delivery (``renew``, ``release``,
  ``record_result``) checks the delivery in full and carries ``AND attempt = ?``: once a
  newer attempt exists, a stale worker's renew returns False, its release changes nothing
  and its ``record_result`` raises ``StaleLease``. A delivery that does not match the
  stored command or names no attempt a claim handed out (attempt 0, a later attempt than
  the stored one, another tenant's or command's ``seq``, a different thread or run ID)
  raises ``InvalidDelivery`` and writes nothing. That is a consistency check, not a
  signature: a ``Delivery`` built by hand with a command's current fields passes it. A result
  recorded by the current attempt is final; recording it again is a no-op that returns
  the stored record.
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
* **One host, one writer.** WAL needs shared memory, so every process that opens the file
  runs on one host (no network filesystem). The queue cursor (:func:`queue_new`) is correct
  because SQLite has one writer at a time, and so is every change to a thread's queue
  (queueing, finishing, releasing, burying), which reads rows no other transaction can be
  changing; a PostgreSQL port must change both (see :mod:`helpers.ledger.delivery`).
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

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from helpers.ledger.acceptance import Acceptance, check_retry, submit_command, utc_now
from helpers.ledger.connections import SYNCHRONOUS_LEVELS, Transactions
from helpers.ledger.delivery import Heartbeat, ManualClock, Outbox, run_dispatcher
from helpers.ledger.ids import (
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
from helpers.ledger.records import (
    CommandNotFound,
    CommandRecord,
    Completed,
    Conversation,
    ConversationNotFound,
    Delivery,
    Forbidden,
    InvalidDelivery,
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
from helpers.ledger.schema import COMMAND_COLUMNS, MIN_SQLITE, SCHEMA, SCHEMA_VERSION, open_file, require_sqlite

__all__ = [
    "COMMAND_COLUMNS", "CRASH_POINTS", "MAX_ID_LENGTH", "MIN_SQLITE", "RUN_NAMESPACE", "SCHEMA", "SCHEMA_VERSION",
    "CommandNotFound", "CommandRecord", "Completed", "Conversation", "ConversationNotFound", "Delivery",
    "Forbidden", "Heartbeat", "InvalidDelivery", "InvalidId", "InvalidPayload", "Ledger", "LedgerBusy",
    "LedgerError", "ManualClock", "PayloadMismatch", "RunRecord", "SchemaVersionError", "SimulatedCrash",
    "StaleLease", "SubmitResult", "canonical_json", "check_retry", "fingerprint", "new_command_id",
    "new_time_ordered_id", "payload_json", "run_dispatcher", "run_id_for", "stable_id", "submit_command", "utc_now",
    "validate_id",
]

CRASH_POINTS = ("before_commit", "after_commit", "after_claim", "after_deliver",
                "before_mark_done", "after_mark_done")


class Ledger:
    """A command ledger on one SQLite file (WAL mode). Safe to share between threads.

    It joins the two halves on one :class:`~helpers.ledger.connections.Transactions`
    (``tx``): ``acceptance`` (conversations, ``submit``, reads) and ``outbox`` (claims,
    leases, results, dead letters). Each method below is one of theirs.
    """

    def __init__(self, path: str | Path, *, timeout: float = 10.0, lease_seconds: float = 30.0,
                 max_attempts: int = 3, synchronous: str = "FULL", clock: Callable[[], float] = time.time,
                 crash_at: str | None = None, name: str | None = None, max_idle: int = 4) -> None:
        require_sqlite()
        if crash_at is not None and crash_at not in CRASH_POINTS:
            raise ValueError(f"unknown crash point {crash_at!r}; choose from {CRASH_POINTS}")
        if synchronous.upper() not in SYNCHRONOUS_LEVELS:
            raise ValueError(f"bad synchronous level {synchronous!r}")
        if max_attempts < 1 or lease_seconds <= 0:
            raise ValueError("max_attempts must be >= 1 and lease_seconds > 0")
        if str(path) == ":memory:" or str(path).startswith("file::memory:") or "mode=memory" in str(path):
            raise ValueError("the ledger needs a file: an in-memory SQLite database is private to one connection, "
                             "and the ledger opens several (one per thread); pass a path such as 'ledger.db'")
        self.path, self.timeout, self.lease_seconds = str(path), timeout, lease_seconds
        self.max_attempts, self.clock, self.crash_at = max_attempts, clock, crash_at
        self.name = name or f"ledger-{uuid.uuid4().hex[:8]}"  # tags the leases and runs this object takes
        self.tx = Transactions(self.path, timeout=timeout, synchronous=synchronous.upper(), max_idle=max_idle,
                               crash_at=crash_at)
        open_file(self.tx, time.monotonic() + timeout)
        self.acceptance = Acceptance(self.tx)
        self.outbox = Outbox(self.tx, clock=clock, lease_seconds=lease_seconds, max_attempts=max_attempts,
                             name=self.name)
        self.tx.on_crash = self.outbox.expire_own_leases

    def close(self) -> None:
        """Close every connection this object opened (connections in use close when returned)."""
        self.tx.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- acceptance
    def create_conversation(self, tenant_id: str, conversation_id: str) -> Conversation:
        """Create (or return the existing) conversation and its server-minted thread_id."""
        return self.acceptance.create_conversation(tenant_id, conversation_id)

    def get_conversation(self, tenant_id: str, conversation_id: str) -> Conversation:
        """The caller's conversation, or ``ConversationNotFound``."""
        return self.acceptance.get_conversation(tenant_id, conversation_id)

    def submit(self, tenant_id: str, command_id: str, conversation_id: str, payload: Any) -> SubmitResult:
        """Accept a command once. Retries with the same key and payload get the same record."""
        return self.acceptance.submit(tenant_id, command_id, conversation_id, payload)

    def get_command(self, tenant_id: str, command_id: str) -> CommandRecord:
        """The stored command, or ``CommandNotFound``."""
        return self.acceptance.get_command(tenant_id, command_id)

    def list_commands(self, tenant_id: str, conversation_id: str) -> list[CommandRecord]:
        """All commands of the caller's conversation, oldest first."""
        return self.acceptance.list_commands(tenant_id, conversation_id)

    def list_runs(self, tenant_id: str, conversation_id: str) -> list[RunRecord]:
        """Every delivery attempt of the conversation's commands, in command then attempt order."""
        return self.acceptance.list_runs(tenant_id, conversation_id)

    # ----------------------------------------------------------------- delivery
    def claim(self, skip: frozenset[int] | set[int] = frozenset()) -> Delivery | None:
        """Lease the oldest claimable head (seq not in ``skip``), or None; see :meth:`Outbox.claim`."""
        return self.outbox.claim(skip)

    def renew(self, delivery: Delivery) -> bool:
        """Extend the lease by ``lease_seconds``; False if a newer attempt holds the command."""
        return self.outbox.renew(delivery)

    def release(self, delivery: Delivery, error: BaseException | str) -> bool:
        """A failed attempt: end the lease with ``error`` (or bury the command at ``max_attempts``)."""
        return self.outbox.release(delivery, error)

    def record_result(self, delivery: Delivery, result: Any, *, status: Literal["done", "failed"] = "done",
                      start_checkpoint_id: str | None = None,
                      end_checkpoint_id: str | None = None) -> CommandRecord:
        """Finish the command with ``result`` if ``delivery`` is the current attempt (else ``StaleLease``)."""
        return self.outbox.record_result(delivery, result, status=status, start_checkpoint_id=start_checkpoint_id,
                                         end_checkpoint_id=end_checkpoint_id)

    def deliver(self, delivery: Delivery, handle: Callable[[Delivery], Any], *,
                renew_every: float | None = None, heartbeat: bool = True) -> bool:
        """Run ``handle(delivery)`` under a heartbeat and record what it returns; see :meth:`Outbox.deliver`."""
        return self.outbox.deliver(delivery, handle, renew_every=renew_every, heartbeat=heartbeat)

    def dispatch_pending(self, handle: Callable[[Delivery], Any], *, limit: int | None = None,
                         renew_every: float | None = None, heartbeat: bool = True) -> list[Delivery]:
        """One sweep: deliver every claimable head once, oldest first; the deliveries recorded."""
        return self.outbox.dispatch_pending(handle, limit=limit, renew_every=renew_every, heartbeat=heartbeat)

    def pending_count(self) -> int:
        """Commands not finished yet (queued: accepted or running, leased or not)."""
        return self.outbox.pending_count()

    @property
    def renewals(self) -> int:
        """Successful ``renew`` calls of this object (demos wait on it)."""
        return self.outbox.renewals

    def wait_for_renewals(self, count: int, timeout: float = 10.0) -> bool:
        """Block until this object has renewed ``count`` leases in all (for demos and tests)."""
        return self.outbox.wait_for_renewals(count, timeout)
