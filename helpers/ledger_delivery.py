"""The delivery half of the command ledger: leases, fencing, heartbeats, dead letters, dispatchers.

:class:`helpers.ledger.Ledger` inherits :class:`DeliveryMixin`; import everything through
:mod:`helpers.ledger`. A delivery goes through these steps:

1. ``claim()`` first puts the commands accepted since the last claim into their threads'
   queues (``submit`` only inserts), in ``seq`` order; then it leases the head of one
   thread's queue: ``attempt`` goes up by one (the fencing token), ``lease_expires =
   clock() + lease_seconds``, a ``runs`` row is written.
2. The handler runs under a :class:`Heartbeat`, which calls ``renew(delivery)`` every
   ``lease_seconds / 3`` until the handler returns.
3. ``record_result(delivery, result)`` finishes the command and makes the thread's next
   command the head; a handler that raised leads to ``release(delivery, error)`` instead,
   which ends the lease (or, at ``max_attempts``, makes the command ``dead``).

Every write of steps 2 and 3 says ``AND attempt = ?``: a worker whose lease was taken over
changes nothing. :func:`run_dispatcher` loops over these steps (``python -m
helpers.ledger_service dispatch`` runs it as a process); :class:`ManualClock` lets a demo
or a test move time forward without waiting.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Literal

from helpers.ledger_ids import payload_json
from helpers.ledger_records import CommandNotFound, CommandRecord, Completed, Delivery, LedgerBusy, StaleLease

__all__ = ["DeliveryMixin", "Heartbeat", "ManualClock", "run_dispatcher"]

# The heads of the queues, oldest lease first (0 = never leased): an index range scan.
CLAIM_SQL = ("SELECT seq, attempt, thread_id FROM commands "
             "WHERE status IN ('accepted', 'running') AND ready = 1 AND lease_expires <= ? "
             "ORDER BY lease_expires, seq LIMIT ?")
# After a head finishes, the next command in its thread's queue becomes the head.
PROMOTE_SQL = ("UPDATE commands SET ready = 1 WHERE seq = (SELECT MIN(seq) FROM commands "
               "WHERE thread_id = ? AND status IN ('accepted', 'running') AND ready IS NOT NULL)")
# submit only inserts; a claim first queues what was accepted since the last claim, in seq
# order: the oldest new command of a thread without a queue becomes its head, the rest wait.
QUEUE_NEW_SQL = (
    "UPDATE commands SET ready = 1 WHERE seq IN (SELECT MIN(seq) FROM commands AS new WHERE seq > :through"
    " GROUP BY thread_id HAVING NOT EXISTS (SELECT 1 FROM commands WHERE thread_id = new.thread_id"
    " AND status IN ('accepted', 'running') AND ready IS NOT NULL))",
    "UPDATE commands SET ready = 0 WHERE seq > :through AND ready IS NULL",
    "UPDATE queue_cursor SET queued_through = :newest",
)


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

    ``lost`` is set when a renewal finds that a newer attempt took the command over; the
    run can check it and stop early. A busy database only skips one beat.
    """

    def __init__(self, ledger: DeliveryMixin, delivery: Delivery, every: float) -> None:
        self.ledger, self.delivery, self.every = ledger, delivery, every
        self.lost, self._stop = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{delivery.seq}", daemon=True)

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            try:
                if not self.ledger.renew(self.delivery):
                    self.lost.set()
                    return
            except LedgerBusy:
                continue

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class DeliveryMixin:
    """claim / renew / release / record_result / deliver / dispatch_pending (see the module doc)."""

    # provided by Ledger
    clock: Callable[[], float]
    lease_seconds: float
    max_attempts: int
    name: str
    renewals: int
    _renewed: threading.Condition
    _write: Callable[[], AbstractContextManager[sqlite3.Connection]]
    _using: Callable[[], AbstractContextManager[sqlite3.Connection]]
    _crash: Callable[..., None]
    _command_by_seq: Callable[[sqlite3.Connection, int], CommandRecord]

    def claim(self, skip: frozenset[int] | set[int] = frozenset()) -> Delivery | None:
        """Lease the oldest claimable head (seq not in ``skip``), or None if there is none.

        A head whose lease ended without a result after ``max_attempts`` deliveries is made
        ``dead`` here instead of being handed out again.
        """
        now = self.clock()
        with self._write() as conn:
            self._queue_new(conn)
            while True:
                rows = conn.execute(CLAIM_SQL, (now, len(skip) + 1)).fetchall()
                rows = [r for r in rows if r[0] not in skip]
                if not rows:
                    return None
                seq, attempt, thread_id = rows[0]
                if attempt >= self.max_attempts:
                    self._bury(conn, seq, thread_id, f"the lease of attempt {attempt} ended without a result")
                    continue
                attempt += 1
                conn.execute("UPDATE commands SET status = 'running', attempt = ?, lease_owner = ?, "
                             "lease_expires = ? WHERE seq = ? AND attempt = ?",
                             (attempt, self.name, now + self.lease_seconds, seq, attempt - 1))
                tenant_id, command_id, conversation_id, run_id, payload = conn.execute(
                    "SELECT tenant_id, command_id, conversation_id, run_id, payload FROM commands WHERE seq = ?",
                    (seq,)).fetchone()
                conn.execute("INSERT INTO runs (run_id, attempt, command_seq, dispatcher, started_at) "
                             "VALUES (?, ?, ?, ?, datetime('now'))", (run_id, attempt, seq, self.name))
                delivery = Delivery(seq, attempt, tenant_id, command_id, conversation_id, thread_id, run_id,
                                    json.loads(payload))
                break
        self._crash("after_claim")
        return delivery

    @staticmethod
    def _queue_new(conn: sqlite3.Connection) -> None:
        # Inside the claim's write transaction: no command can be accepted meanwhile, and
        # seq only grows (commands are never deleted), so "seq > through" is exactly the new ones.
        through, newest = conn.execute(
            "SELECT queued_through, (SELECT MAX(seq) FROM commands) FROM queue_cursor").fetchone()
        if newest is not None and newest > through:
            for statement in QUEUE_NEW_SQL:
                conn.execute(statement, {"through": through, "newest": newest})

    def renew(self, delivery: Delivery) -> bool:
        """Extend the lease by ``lease_seconds``; False if a newer attempt holds the command."""
        with self._write() as conn:
            cursor = conn.execute("UPDATE commands SET lease_expires = ? WHERE seq = ? AND attempt = ? "
                                  "AND status IN ('accepted', 'running')",
                                  (self.clock() + self.lease_seconds, delivery.seq, delivery.attempt))
        renewed = cursor.rowcount == 1
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
        text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        text = text[:500]
        with self._write() as conn:
            cursor = conn.execute("UPDATE commands SET status = 'accepted', lease_expires = 0, lease_owner = NULL, "
                                  "error = ? WHERE seq = ? AND attempt = ? AND status IN ('accepted', 'running')",
                                  (text, delivery.seq, delivery.attempt))
            if cursor.rowcount != 1:
                return False
            conn.execute("UPDATE runs SET outcome = 'error' WHERE run_id = ? AND attempt = ?",
                         (delivery.run_id, delivery.attempt))
            if delivery.attempt >= self.max_attempts:
                self._bury(conn, delivery.seq, delivery.thread_id, text)
        return True

    @staticmethod
    def _bury(conn: sqlite3.Connection, seq: int, thread_id: str, error: str) -> None:
        # The dead-letter policy: the command keeps its last error, and its thread moves on.
        conn.execute("UPDATE commands SET status = 'dead', ready = 0, lease_expires = 0, error = ? WHERE seq = ?",
                     (error, seq))
        conn.execute("UPDATE runs SET outcome = 'dead' WHERE command_seq = ? AND attempt = "
                     "(SELECT MAX(attempt) FROM runs WHERE command_seq = ?)", (seq, seq))
        conn.execute(PROMOTE_SQL, (thread_id,))

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
        with self._write() as conn:
            cursor = conn.execute("UPDATE commands SET status = ?, result = ?, error = NULL, ready = 0, "
                                  "lease_expires = 0 WHERE seq = ? AND attempt = ? "
                                  "AND status IN ('accepted', 'running')",
                                  (status, body, delivery.seq, delivery.attempt))
            if cursor.rowcount == 1:
                conn.execute("UPDATE runs SET outcome = ?, start_checkpoint_id = ?, end_checkpoint_id = ? "
                             "WHERE run_id = ? AND attempt = ?",
                             (status, start_checkpoint_id, end_checkpoint_id, delivery.run_id, delivery.attempt))
                conn.execute(PROMOTE_SQL, (delivery.thread_id,))
            else:
                current = conn.execute("SELECT attempt FROM commands WHERE seq = ?", (delivery.seq,)).fetchone()
                if current is None:
                    raise CommandNotFound(f"no command with seq {delivery.seq}")
                if current[0] != delivery.attempt:
                    raise StaleLease(delivery.command_id, delivery.attempt, current[0])
            record = self._command_by_seq(conn, delivery.seq)
            self._crash("before_mark_done", in_transaction=True)
        self._crash("after_mark_done")
        return record

    def deliver(self, delivery: Delivery, handle: Callable[[Delivery], Any], *,
                renew_every: float | None = None, heartbeat: bool = True) -> bool:
        """Run ``handle(delivery)`` under a heartbeat and record what it returns.

        ``handle`` returns the result (or a :class:`Completed`). An ``Exception`` from it is a
        failed attempt (``release``). Returns True if this attempt's result was recorded,
        False if it failed or its lease was taken over (``StaleLease``).
        """
        every = renew_every if renew_every is not None else self.lease_seconds / 3
        beat: AbstractContextManager[Any] = Heartbeat(self, delivery, every) if heartbeat else nullcontext()
        with beat:
            try:
                value = handle(delivery)
                done = value if isinstance(value, Completed) else Completed(value)
                payload_json(done.result, label="result")  # a result that cannot be stored is a failure
            except Exception as exc:  # a failed attempt, not a crash: SimulatedCrash passes through
                self.release(delivery, exc)
                return False
        self._crash("after_deliver")
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
        with self._using() as conn:
            return conn.execute("SELECT COUNT(*) FROM commands WHERE status IN ('accepted', 'running')").fetchone()[0]


def _sweeps(ledger: DeliveryMixin, handle: Callable[[Delivery], Any], deadline: float | None,
            stop: threading.Event | None) -> Iterator[int]:
    while (stop is None or not stop.is_set()) and (deadline is None or time.monotonic() < deadline):
        try:
            yield len(ledger.dispatch_pending(handle))
        except LedgerBusy:
            yield 0


def run_dispatcher(ledger: DeliveryMixin, handle: Callable[[Delivery], Any], *, poll: float = 0.05,
                   until_drained: bool = False, max_seconds: float | None = None,
                   stop: threading.Event | None = None) -> int:
    """A dispatcher's loop: sweep the outbox, deliver, sleep ``poll`` when idle.

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

