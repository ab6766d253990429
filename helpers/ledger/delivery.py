"""The delivery half of the command ledger: the queue, leases, fencing, results, dead letters.

Chapter 11 shows the functions marked ``# saved as`` in cells and saves them here. Each
one runs inside a write transaction that the caller holds (:meth:`Transactions.write`),
so nothing else writes between its statements. :class:`Outbox` wraps them with
transactions, the clock and crash points; :class:`helpers.ledger.Ledger` hands both halves
the same :class:`~helpers.ledger.connections.Transactions`. The functions name the
ledger's records as ``ledger.Delivery``, ``ledger.StaleLease`` ... (this module imports
its own package), so the cells and this file are the same code.

A delivery goes through these steps:

1. :func:`claim_next` first queues the commands accepted since the last claim
   (:func:`queue_new`, in ``seq`` order), then leases the head of one thread's queue
   (:func:`next_head`, :func:`lease`): ``attempt`` goes up by one (the fencing token),
   ``lease_expires = now + lease_seconds``, a ``runs`` row is written. A head whose lease
   ended without a result after ``max_attempts`` deliveries is buried instead
   (:func:`bury`).
2. The handler runs under a :class:`Heartbeat`, which calls ``renew`` every
   ``lease_seconds / 3`` until the handler returns (:func:`renew_lease`).
3. :func:`finish_command` records the result and makes the thread's next command its
   head; a handler that raised leads to :func:`release_lease` instead, which ends the
   lease (or, at ``max_attempts``, buries the command).

Every write of steps 2 and 3 first checks the delivery in full (:func:`check_delivery`:
seq, tenant, command, conversation, thread, run ID, and ``attempt`` from 1 up to the
stored attempt; else ``InvalidDelivery``, nothing written), then says ``AND attempt = ?``:
a worker whose lease was taken over changes nothing. :func:`run_dispatcher` loops over the
steps (``python -m helpers.ledger.service dispatch`` runs it as a process);
:class:`ManualClock` lets a demo or a test move time forward without waiting.

What the queue cursor assumes: ``queue_new`` queues every command with ``seq`` above
``queue_cursor.queued_through`` and moves the cursor to the largest ``seq`` it saw. That
is correct only because SQLite has one writer at a time and hands out ``seq`` in commit
order: once a claim has seen ``seq`` 7, no smaller ``seq`` can still commit. On PostgreSQL
a sequence value is taken at insert time, not at commit, so a transaction holding ``seq`` 6
can commit after another claim saw 7; the cursor would then skip 6 for ever. A port must
find new commands by a state (``WHERE ready IS NULL``, which a partial index keeps small)
instead of a cursor, and claim with ``SELECT ... FOR UPDATE SKIP LOCKED``.

The one writer also makes every change to a thread's queue safe: ``queue_new`` decides that
a thread has no queue yet, and :data:`PROMOTE_SQL` picks its next command, from rows no
other transaction can be changing. Under PostgreSQL's READ COMMITTED a sweep and the finish
of a thread's head can interleave so that the next command stays at ``ready = 0`` behind a
head that is done, where no claim looks; each such transaction must first lock the thread
(``SELECT ... FROM conversations WHERE thread_id = %s FOR UPDATE``) or run under
SERIALIZABLE and retry on 40001 (``tests/helpers/test_ledger_postgres.py`` shows all three).

Leases compare ``clock()`` values written by different dispatchers: their clocks must
agree to well within a lease. Claims use the partial index ``commands_claim``, which holds
only the heads of the queues, so a claim costs the same with 2,000 or 20,000 commands
queued behind a running one; queueing new commands is paid once per command, by the first
claim after them.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Literal

from helpers import ledger
from helpers.ledger.connections import Transactions
from helpers.ledger.ids import payload_json
from helpers.ledger.records import (
    CommandNotFound,
    CommandRecord,
    Completed,
    Delivery,
    LedgerBusy,
    LedgerError,
    StaleLease,
)
from helpers.ledger.schema import COMMAND_COLUMNS

__all__ = ["PROMOTE_SQL", "QUEUE_NEW_SQL", "Heartbeat", "ManualClock", "Outbox", "bury", "check_delivery",
           "claim_next", "finish_command", "lease", "next_head", "queue_new", "release_lease", "renew_lease",
           "run_dispatcher"]


# shown in solutions/11_command_ledger.ipynb
QUEUE_NEW_SQL = (
    # the oldest new command of each thread that has no queue yet becomes its head ...
    "UPDATE commands SET ready = 1 WHERE seq IN (SELECT MIN(seq) FROM commands AS new WHERE seq > :through"
    " GROUP BY thread_id HAVING NOT EXISTS (SELECT 1 FROM commands WHERE thread_id = new.thread_id"
    " AND status IN ('accepted', 'running') AND ready IS NOT NULL))",
    # ... every other new command waits behind its thread's head ...
    "UPDATE commands SET ready = 0 WHERE seq > :through AND ready IS NULL",
    # ... and the cursor moves past them all
    "UPDATE queue_cursor SET queued_through = :newest",
)


# shown in solutions/11_command_ledger.ipynb
def queue_new(conn: sqlite3.Connection) -> None:
    """Put the commands accepted since the last claim into their threads' queues, in seq order."""
    through, newest = conn.execute(
        "SELECT queued_through, (SELECT MAX(seq) FROM commands) FROM queue_cursor").fetchone()
    if newest is not None and newest > through:  # one writer at a time: no smaller seq can still appear
        for statement in QUEUE_NEW_SQL:
            conn.execute(statement, {"through": through, "newest": newest})


# shown in solutions/11_command_ledger.ipynb
def next_head(conn: sqlite3.Connection, now: float, skip: frozenset[int] | set[int] = frozenset()) -> tuple | None:
    """(seq, attempt, thread_id) of a head whose lease has ended (0: never leased), the earliest first; or None."""
    rows = conn.execute(
        "SELECT seq, attempt, thread_id FROM commands"
        " WHERE status IN ('accepted', 'running') AND ready = 1 AND lease_expires <= ?"
        " ORDER BY lease_expires, seq LIMIT ?", (now, len(skip) + 1)).fetchall()
    return next((row for row in rows if row[0] not in skip), None)


# shown in solutions/11_command_ledger.ipynb
def lease(conn: sqlite3.Connection, seq: int, attempt: int, thread_id: str, now: float, lease_seconds: float,
          owner: str) -> ledger.Delivery:
    """Lease command ``seq`` until ``now + lease_seconds``: the next attempt, its fencing token."""
    attempt += 1
    conn.execute("UPDATE commands SET status = 'running', attempt = ?, lease_owner = ?, lease_expires = ?"
                 " WHERE seq = ? AND attempt = ?", (attempt, owner, now + lease_seconds, seq, attempt - 1))
    tenant_id, command_id, conversation_id, run_id, payload = conn.execute(
        "SELECT tenant_id, command_id, conversation_id, run_id, payload FROM commands WHERE seq = ?",
        (seq,)).fetchone()
    conn.execute("INSERT INTO runs (run_id, attempt, command_seq, dispatcher, started_at)"
                 " VALUES (?, ?, ?, ?, datetime('now'))", (run_id, attempt, seq, owner))
    return ledger.Delivery(seq, attempt, tenant_id, command_id, conversation_id, thread_id, run_id,
                           json.loads(payload))


# shown in solutions/11_command_ledger.ipynb
def check_delivery(conn: sqlite3.Connection, delivery: ledger.Delivery) -> int:
    """The command's current attempt, if a claim could have made ``delivery``; else InvalidDelivery."""
    row = None
    if (type(delivery) is ledger.Delivery and type(delivery.seq) is int and type(delivery.attempt) is int
            and -2**63 <= delivery.seq < 2**63):  # SQLite's integers: a larger seq names no row
        row = conn.execute("SELECT tenant_id, command_id, conversation_id, thread_id, run_id, attempt"
                           " FROM commands WHERE seq = ?", (delivery.seq,)).fetchone()
    named = (delivery.tenant_id, delivery.command_id, delivery.conversation_id, delivery.thread_id,
             delivery.run_id) if row is not None else None
    if row is None or row[:5] != named or not 1 <= delivery.attempt <= row[5]:
        shown = ", ".join(f"{field}={repr(getattr(delivery, field, None))[:40]}"  # short: never echo a huge value
                          for field in ("seq", "attempt", "tenant_id", "command_id"))
        raise ledger.InvalidDelivery(f"no claim made this delivery ({shown}); nothing was written")
    return row[5]


# shown in solutions/11_command_ledger.ipynb
def renew_lease(conn: sqlite3.Connection, delivery: ledger.Delivery, until: float) -> bool:
    """Move the lease's end to ``until``; False (nothing changed) if a newer attempt holds the command
    or this attempt's lease was released (only a running attempt has a lease to renew)."""
    check_delivery(conn, delivery)
    cursor = conn.execute("UPDATE commands SET lease_expires = ? WHERE seq = ? AND attempt = ?"
                          " AND status = 'running'", (until, delivery.seq, delivery.attempt))
    return cursor.rowcount == 1


# shown in solutions/11_command_ledger.ipynb
PROMOTE_SQL = ("UPDATE commands SET ready = 1 WHERE seq = (SELECT MIN(seq) FROM commands"
               " WHERE thread_id = ? AND status IN ('accepted', 'running') AND ready IS NOT NULL)")


# shown in solutions/11_command_ledger.ipynb
def finish_command(conn: sqlite3.Connection, delivery: ledger.Delivery, status: str, result: str,
                   start_checkpoint_id: str | None, end_checkpoint_id: str | None) -> bool:
    """Record the result (JSON text) of the current attempt; the thread's next command becomes its head.

    False if the command had already ended (the first outcome wins); StaleLease if a newer
    attempt holds it.
    """
    current = check_delivery(conn, delivery)
    cursor = conn.execute("UPDATE commands SET status = ?, result = ?, error = NULL, ready = 0, lease_expires = 0"
                          " WHERE seq = ? AND attempt = ? AND status IN ('accepted', 'running')",
                          (status, result, delivery.seq, delivery.attempt))
    if cursor.rowcount == 0:
        if current != delivery.attempt:
            raise ledger.StaleLease(delivery.command_id, delivery.attempt, current)
        return False
    conn.execute("UPDATE runs SET outcome = ?, start_checkpoint_id = ?, end_checkpoint_id = ?"
                 " WHERE run_id = ? AND attempt = ?",
                 (status, start_checkpoint_id, end_checkpoint_id, delivery.run_id, delivery.attempt))
    conn.execute(PROMOTE_SQL, (delivery.thread_id,))
    return True


# shown in solutions/11_command_ledger.ipynb
def bury(conn: sqlite3.Connection, seq: int, thread_id: str, error: str) -> None:
    """The dead letter: the command keeps its last error and leaves its thread's queue."""
    conn.execute("UPDATE commands SET status = 'dead', ready = 0, lease_expires = 0, error = ? WHERE seq = ?",
                 (error, seq))
    conn.execute("UPDATE runs SET outcome = 'dead' WHERE command_seq = ? AND attempt ="
                 " (SELECT MAX(attempt) FROM runs WHERE command_seq = ?)", (seq, seq))
    conn.execute(PROMOTE_SQL, (thread_id,))


# shown in solutions/11_command_ledger.ipynb
def release_lease(conn: sqlite3.Connection, delivery: ledger.Delivery, error: str, max_attempts: int) -> bool:
    """A failed attempt: end its lease with ``error``, or bury the command after ``max_attempts``.

    False (nothing changed) if a newer attempt holds the command or it has ended.
    """
    check_delivery(conn, delivery)
    cursor = conn.execute("UPDATE commands SET status = 'accepted', lease_expires = 0, lease_owner = NULL,"
                          " error = ? WHERE seq = ? AND attempt = ? AND status IN ('accepted', 'running')",
                          (error, delivery.seq, delivery.attempt))
    if cursor.rowcount == 0:
        return False
    conn.execute("UPDATE runs SET outcome = 'error' WHERE run_id = ? AND attempt = ?",
                 (delivery.run_id, delivery.attempt))
    if delivery.attempt >= max_attempts:
        bury(conn, delivery.seq, delivery.thread_id, error)
    return True


# shown in solutions/11_command_ledger.ipynb
def claim_next(conn: sqlite3.Connection, now: float, lease_seconds: float, owner: str, max_attempts: int,
               skip: frozenset[int] | set[int] = frozenset()) -> ledger.Delivery | None:
    """Queue what is new, then lease the oldest claimable head; bury heads out of attempts on the way."""
    queue_new(conn)
    while (head := next_head(conn, now, skip)) is not None:
        seq, attempt, thread_id = head
        if attempt < max_attempts:
            return lease(conn, seq, attempt, thread_id, now, lease_seconds, owner)
        bury(conn, seq, thread_id, f"the lease of attempt {attempt} ended without a result")
    return None


class ManualClock:
    """A clock for demos and tests: ``clock()`` returns the time, ``advance(s)`` moves it."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self._now, self._lock = start, threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> float:
        with self._lock:
            self._now += seconds
            return self._now


class Heartbeat(AbstractContextManager):
    """Renews a delivery's lease every ``every`` seconds while the ``with`` block runs.

    ``lost`` is set when a renewal finds that a newer attempt took the command over (or
    refuses the delivery); the run can check it and stop early. A busy database only skips
    one beat.
    """

    def __init__(self, outbox: Any, delivery: Delivery, every: float) -> None:
        self.outbox, self.delivery, self.every = outbox, delivery, every
        self.lost, self._stop = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{delivery.seq}", daemon=True)

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            try:
                if not self.outbox.renew(self.delivery):
                    self.lost.set()
                    return
            except LedgerBusy:
                continue
            except LedgerError:
                self.lost.set()
                return

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class Outbox:
    """claim / renew / release / record_result / deliver / dispatch_pending, on shared transactions."""

    def __init__(self, tx: Transactions, *, clock: Callable[[], float], lease_seconds: float, max_attempts: int,
                 name: str) -> None:
        self.tx, self.clock, self.lease_seconds, self.max_attempts, self.name = (
            tx, clock, lease_seconds, max_attempts, name)
        self._renewed = threading.Condition()
        self.renewals = 0  # successful renew() calls of this object (demos wait on it)

    def claim(self, skip: frozenset[int] | set[int] = frozenset()) -> Delivery | None:
        """Lease the oldest claimable head (seq not in ``skip``), or None if there is none."""
        with self.tx.write() as conn:
            delivery = claim_next(conn, self.clock(), self.lease_seconds, self.name, self.max_attempts, skip)
        if delivery is not None:
            self.tx.crash("after_claim")
        return delivery

    def renew(self, delivery: Delivery) -> bool:
        """Extend the lease by ``lease_seconds``; False if a newer attempt holds the command."""
        with self.tx.write() as conn:
            renewed = renew_lease(conn, delivery, self.clock() + self.lease_seconds)
        if renewed:
            with self._renewed:
                self.renewals += 1
                self._renewed.notify_all()
        return renewed

    def wait_for_renewals(self, count: int, timeout: float = 10.0) -> bool:
        """Block until this object has renewed ``count`` leases in all (for demos and tests)."""
        with self._renewed:
            return self._renewed.wait_for(lambda: self.renewals >= count, timeout)

    def release(self, delivery: Delivery, error: BaseException | str) -> bool:
        """A failed attempt: end the lease with ``error``, or bury the command at ``max_attempts``.

        Returns False (and changes nothing) when the delivery is stale.
        """
        text = (error if isinstance(error, str) else f"{type(error).__name__}: {error}")[:500]
        with self.tx.write() as conn:
            return release_lease(conn, delivery, text, self.max_attempts)

    def record_result(self, delivery: Delivery, result: Any, *, status: Literal["done", "failed"] = "done",
                      start_checkpoint_id: str | None = None,
                      end_checkpoint_id: str | None = None) -> CommandRecord:
        """Finish the command with ``result`` if ``delivery`` is the current attempt.

        A stale attempt (a newer one exists) raises ``StaleLease`` and writes nothing. The
        current attempt recording again, or after the command ended, returns the stored
        record unchanged: the first outcome wins. The thread's next command becomes its head.
        """
        if status not in ("done", "failed"):
            raise ValueError(f"status must be 'done' or 'failed', not {status!r}")
        body, _ = payload_json(result, label="result")
        with self.tx.write() as conn:
            finish_command(conn, delivery, status, body, start_checkpoint_id, end_checkpoint_id)
            row = conn.execute(f"SELECT {COMMAND_COLUMNS} FROM commands WHERE seq = ?", (delivery.seq,)).fetchone()
            if row is None:  # pragma: no cover - check_delivery found the row in this transaction
                raise CommandNotFound(f"no command with seq {delivery.seq}")
            self.tx.crash("before_mark_done", in_transaction=True)
        self.tx.crash("after_mark_done")
        return CommandRecord.from_row(row)

    def deliver(self, delivery: Delivery, handle: Callable[[Delivery], Any], *,
                renew_every: float | None = None, heartbeat: bool = True) -> bool:
        """Run ``handle(delivery)`` under a heartbeat and record what it returns.

        ``handle`` returns the result (or a :class:`Completed`). An ``Exception`` from it is a
        failed attempt (``release``). Returns True if this attempt's result was recorded,
        False if it failed or its lease was taken over (``StaleLease``).
        """
        every = renew_every if renew_every is not None else self.lease_seconds / 3
        beat: AbstractContextManager[Any] = Heartbeat(self, delivery, every) if heartbeat else nullcontext()
        failure: Exception | None = None
        with beat:
            try:
                value = handle(delivery)
                done = value if isinstance(value, Completed) else Completed(value)
                payload_json(done.result, label="result")  # a result that cannot be stored is a failure
            except Exception as exc:  # a failed attempt, not a crash: SimulatedCrash passes through
                failure = exc
        if failure is not None:
            self.release(delivery, failure)  # after the heartbeat stopped: no late beat renews it
            return False
        self.tx.crash("after_deliver")
        try:
            self.record_result(delivery, done.result, status=done.status,
                               start_checkpoint_id=done.start_checkpoint_id, end_checkpoint_id=done.end_checkpoint_id)
        except StaleLease:
            return False  # a newer attempt owns the command; this run's effect must be deduplicated downstream
        return True

    def dispatch_pending(self, handle: Callable[[Delivery], Any], *, limit: int | None = None,
                         renew_every: float | None = None, heartbeat: bool = True) -> list[Delivery]:
        """One sweep: deliver every claimable head, each at most once per call, oldest first.

        Returns the deliveries whose result was recorded.
        """
        delivered: list[Delivery] = []
        handled: set[int] = set()
        while limit is None or len(delivered) < limit:
            delivery = self.claim(handled)
            if delivery is None:
                break
            handled.add(delivery.seq)
            if self.deliver(delivery, handle, renew_every=renew_every, heartbeat=heartbeat):
                delivered.append(delivery)
        return delivered

    def pending_count(self) -> int:
        """Commands not finished yet (queued: accepted or running, leased or not)."""
        with self.tx.read() as conn:
            return conn.execute("SELECT COUNT(*) FROM commands WHERE status IN ('accepted', 'running')").fetchone()[0]

    def expire_own_leases(self) -> None:
        """End the leases this object holds, as if ``lease_seconds`` had passed (after a simulated crash).

        A "restarted" ledger then recovers at once instead of waiting for the lease; a real
        crash leaves the leases to run out on their own.
        """
        with self.tx.read() as conn:
            conn.execute("UPDATE commands SET lease_expires = 0 WHERE lease_owner = ? "
                         "AND status IN ('accepted', 'running')", (self.name,))


def _sweeps(ledger: Any, handle: Callable[[Delivery], Any], deadline: float | None,
            stop: threading.Event | None) -> Iterator[int]:
    while (stop is None or not stop.is_set()) and (deadline is None or time.monotonic() < deadline):
        try:
            yield len(ledger.dispatch_pending(handle))
        except LedgerBusy:
            yield 0


def run_dispatcher(ledger: Any, handle: Callable[[Delivery], Any], *, poll: float = 0.05,
                   until_drained: bool = False, max_seconds: float | None = None,
                   stop: threading.Event | None = None) -> int:
    """A dispatcher's loop over a :class:`~helpers.ledger.Ledger`: sweep, deliver, sleep ``poll`` when idle.

    Stops when ``stop`` is set, after ``max_seconds``, or (``until_drained``) once no command
    is pending any more, including commands leased by other dispatchers. Returns the number
    of results this dispatcher recorded.
    """
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    recorded = 0
    for count in _sweeps(ledger, handle, deadline, stop):
        recorded += count
        if count:
            continue
        try:
            if until_drained and ledger.pending_count() == 0:
                break
        except LedgerBusy:
            pass
        if stop is not None:
            stop.wait(poll)
        else:
            time.sleep(poll)
    return recorded
