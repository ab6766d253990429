"""The ledger's delivery half (issue 13): fencing, renewal, dead letters, dispatchers, claims.

Each test names the finding it covers (F1 ... F11 in issue 13's order; D1 and D2 are the
two defects of issue 25: a delivery that no claim made).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from helpers.ledger import Delivery, InvalidDelivery, Ledger, LedgerError, ManualClock, StaleLease, run_dispatcher

T = "tenant-a"


def dump(path: Path) -> dict[str, list[tuple]]:
    with closing(sqlite3.connect(path)) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {n: conn.execute(f'SELECT * FROM "{n}" ORDER BY rowid').fetchall() for n in names}


def delivery_row(path: Path, seq: int) -> tuple:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT status, attempt, lease_owner, lease_expires FROM commands WHERE seq = ?",
                            (seq,)).fetchone()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.db"
    with Ledger(path) as setup:
        setup.create_conversation(T, "conv-1")
        setup.create_conversation(T, "conv-2")
    return path


# --------------------------------------------------------------------------- D1, D2 forged deliveries
def _forged(ledger: Ledger, db: Path, delivery: object) -> None:
    """Every write that names ``delivery`` raises InvalidDelivery (a LedgerError) and writes nothing."""
    before = dump(db)
    for write in (lambda: ledger.record_result(delivery, {"answer": "forged"}),  # type: ignore[arg-type]
                  lambda: ledger.renew(delivery),  # type: ignore[arg-type]
                  lambda: ledger.release(delivery, "forged")):  # type: ignore[arg-type]
        with pytest.raises(InvalidDelivery) as info:
            write()
        assert isinstance(info.value, LedgerError) and "nothing was written" in str(info.value)
    assert dump(db) == before


def test_d1_a_delivery_with_attempt_0_is_refused_and_the_thread_does_not_stall(db: Path) -> None:
    """Issue 25's recipe: submit k0, record k0 with attempt 0, submit k1, dispatch: both are delivered."""
    with Ledger(db) as ledger:
        k0 = ledger.submit(T, "k0", "conv-1", {"n": 0}).record
        attempt_0 = Delivery(k0.seq, 0, T, "k0", "conv-1", k0.thread_id, k0.run_id, {"n": 0})
        _forged(ledger, db, attempt_0)
        ledger.submit(T, "k1", "conv-1", {"n": 1})
        delivered = ledger.dispatch_pending(lambda d: {"answer": d.command_id}, heartbeat=False)
        assert [d.command_id for d in delivered] == ["k0", "k1"]
        assert [(c.status, c.result) for c in ledger.list_commands(T, "conv-1")] == [
            ("done", {"answer": "k0"}), ("done", {"answer": "k1"})]


def test_d2_a_delivery_naming_tenant_a_with_tenant_b_s_seq_is_refused(db: Path) -> None:
    """Issue 25's recipe: a delivery for tenant A that carries tenant B's seq must not write B's command."""
    with Ledger(db) as ledger:
        ledger.create_conversation("tenant-b", "conv-b")
        ledger.submit(T, "mine", "conv-1", {"n": 1})
        ledger.submit("tenant-b", "theirs", "conv-b", {"n": 2})
        mine = ledger.claim()
        theirs = ledger.claim()
        assert (mine.tenant_id, theirs.tenant_id) == (T, "tenant-b")
        _forged(ledger, db, replace(mine, seq=theirs.seq))  # A's names, B's seq and attempt
        _forged(ledger, db, replace(theirs, tenant_id=T))  # B's seq under A's name
        _forged(ledger, db, replace(theirs, command_id="mine"))
        assert ledger.get_command("tenant-b", "theirs").status == "running"
        assert ledger.record_result(theirs, {"answer": "B's own"}).result == {"answer": "B's own"}


@pytest.mark.parametrize("change", [
    {"attempt": 2},  # a later attempt than any claim made
    {"attempt": -1}, {"attempt": True}, {"attempt": "1"}, {"attempt": 1.0}, {"seq": "1"}, {"seq": 999},
    {"thread_id": "another-thread"}, {"run_id": "another-run"}, {"conversation_id": "conv-2"},
])
def test_d1_d2_a_delivery_is_checked_in_full(db: Path, change: dict[str, Any]) -> None:
    with Ledger(db) as ledger:
        ledger.submit(T, "cmd-1", "conv-1", {"n": 1})
        ledger.submit(T, "cmd-2", "conv-2", {"n": 2})
        real = ledger.claim()
        _forged(ledger, db, replace(real, **change))
        assert ledger.renew(real) and ledger.record_result(real, "ok").status == "done"  # the real one still works


def test_d1_something_that_is_not_a_delivery_is_refused(db: Path) -> None:
    with Ledger(db) as ledger:
        ledger.submit(T, "cmd-1", "conv-1", {"n": 1})
        real = ledger.claim()
        _forged(ledger, db, tuple(vars(real).values()))
        _forged(ledger, db, None)


def test_d1_a_stale_delivery_is_stale_not_invalid(db: Path) -> None:
    """Attempt 1 of a command now at attempt 2 was made by a claim: stale (False / StaleLease), not forged."""
    clock = ManualClock()
    with Ledger(db, clock=clock) as ledger:
        ledger.submit(T, "cmd-1", "conv-1", {"n": 1})
        first = ledger.claim()
        clock.advance(31)
        assert ledger.claim().attempt == 2
        assert ledger.renew(first) is False and ledger.release(first, "late") is False
        with pytest.raises(StaleLease):
            ledger.record_result(first, "late")


# --------------------------------------------------------------------------- F1 fencing
def test_f1_a_stale_worker_changes_nothing(db: Path) -> None:
    """A's lease ends, B re-claims (attempt 2): A's renew, release and result change nothing."""
    clock = ManualClock()
    with Ledger(db, clock=clock, name="A") as a, Ledger(db, clock=clock, name="B") as b, \
            Ledger(db, clock=clock, name="C") as c:
        a.submit(T, "cmd-1", "conv-1", {"n": 1})
        stale = a.claim()
        clock.advance(31)
        current = b.claim()
        assert (stale.attempt, current.attempt) == (1, 2)
        before = dump(db)
        assert a.renew(stale) is False
        assert a.release(stale, RuntimeError("A's deliver raised")) is False
        with pytest.raises(StaleLease) as info:
            a.record_result(stale, {"answer": "from A"})
        assert (info.value.attempt, info.value.current) == (1, 2)
        assert dump(db) == before  # not one byte changed
        assert delivery_row(db, current.seq)[:3] == ("running", 2, "B")
        assert c.claim() is None  # no attempt 3 while B still holds its lease
        assert a.get_command(T, "cmd-1").status == "running"
        done = b.record_result(current, {"answer": "from B"})
        assert (done.status, done.result) == ("done", {"answer": "from B"})
        with pytest.raises(StaleLease):  # also after the command ended: a stale result is refused
            a.record_result(stale, {"answer": "from A"})
        assert b.get_command(T, "cmd-1").result == {"answer": "from B"}


def test_f1_the_real_time_reproduction_gives_no_third_attempt(db: Path) -> None:
    """Issue 13's reproduction with real leases: A (0.1 s) is slow and its deliver raises late."""
    with Ledger(db, lease_seconds=0.1) as a, Ledger(db, lease_seconds=30) as b:
        a.submit(T, "cmd-1", "conv-1", {})
        slow = a.claim()
        time.sleep(0.15)
        taken = b.claim()
        assert taken.attempt == 2
        a.release(slow, RuntimeError("A gave up late"))  # before the fix this cleared B's lease
        assert b.claim() is None
        assert b.get_command(T, "cmd-1").status == "running"


# --------------------------------------------------------------------------- F2 renewal
class SlowDelivery:
    """A dispatcher in a worker thread whose deliver blocks until :meth:`finish`: a slow run.

    Started, it waits until the deliver has been entered, so the command is claimed.
    """

    def __init__(self, ledger: Ledger, result: str, **dispatch_options: Any) -> None:
        self.result = result
        self.entered, self.release = threading.Event(), threading.Event()
        self.worker = threading.Thread(target=lambda: ledger.dispatch_pending(self.deliver, **dispatch_options))
        self.worker.start()
        assert self.entered.wait(10)

    def deliver(self, d: Delivery) -> str:
        self.entered.set()
        self.release.wait(10)
        return self.result

    def finish(self) -> None:
        """Let the deliver return its result, and wait until the dispatcher has recorded it."""
        self.release.set()
        self.worker.join(10)
        assert not self.worker.is_alive()


def test_f2_a_heartbeat_keeps_a_slow_run_exclusive(db: Path) -> None:
    clock = ManualClock()
    with Ledger(db, clock=clock, name="A") as a, Ledger(db, clock=clock, name="B") as b:
        a.submit(T, "cmd-1", "conv-1", {})
        run = SlowDelivery(a, "ok", renew_every=0.002)
        for _ in range(3):  # 60 s in all, twice the lease, renewed along the way
            clock.advance(20)
            assert a.wait_for_renewals(a.renewals + 2)
            assert b.claim() is None
        run.finish()
        assert a.get_command(T, "cmd-1").status == "done"
        assert [r.attempt for r in a.list_runs(T, "conv-1")] == [1]


def test_f2_without_renewal_the_same_run_is_delivered_twice(db: Path) -> None:
    clock = ManualClock()
    with Ledger(db, clock=clock, name="A") as a, Ledger(db, clock=clock, name="B") as b:
        a.submit(T, "cmd-1", "conv-1", {})
        run = SlowDelivery(a, "late", heartbeat=False)
        clock.advance(31)
        assert [d.attempt for d in b.dispatch_pending(lambda d: "on time")] == [2]
        run.finish()
        assert a.get_command(T, "cmd-1").result == "on time"  # A's late result was refused


def test_f2_real_time_heartbeat_outlives_the_lease(db: Path) -> None:
    """0.3 s leases, a 0.9 s run: another dispatcher polling all along never gets it."""
    stolen: list[int] = []
    with Ledger(db, lease_seconds=0.3) as a, Ledger(db, lease_seconds=0.3) as b:
        a.submit(T, "cmd-1", "conv-1", {})
        entered, done = threading.Event(), threading.Event()

        def slow(d: Delivery) -> str:
            entered.set()
            time.sleep(0.9)
            return "ok"

        def poll() -> None:
            entered.wait(10)
            while not done.is_set():
                stolen.extend(d.attempt for d in b.dispatch_pending(lambda d: "stolen"))
                time.sleep(0.02)

        poller = threading.Thread(target=poll)
        poller.start()
        a.dispatch_pending(slow, renew_every=0.05)
        done.set()
        poller.join(10)
        assert stolen == []
        assert a.get_command(T, "cmd-1").result == "ok"


# --------------------------------------------------------------------------- F3 dead letters
def test_f3_a_failing_command_dies_and_its_thread_moves_on(db: Path) -> None:
    with Ledger(db, max_attempts=3) as led:
        led.submit(T, "poison", "conv-1", {"n": 1})
        led.submit(T, "after", "conv-1", {"n": 2})
        tries: list[int] = []

        def handle(d: Delivery) -> str:
            if d.command_id == "poison":
                tries.append(d.attempt)
                raise KeyError(f"no text on attempt {d.attempt}")
            return "fine"

        for _ in range(5):
            led.dispatch_pending(handle)
        poison = led.get_command(T, "poison")
        assert tries == [1, 2, 3]
        assert poison.status == "dead" and poison.error == "KeyError: 'no text on attempt 3'"
        assert led.get_command(T, "after").status == "done"
        assert [(r.command_id, r.attempt, r.outcome) for r in led.list_runs(T, "conv-1")] == [
            ("poison", 1, "error"), ("poison", 2, "error"), ("poison", 3, "dead"), ("after", 1, "done")]


def test_f3_a_failed_attempt_keeps_its_error_until_a_result_is_recorded(db: Path) -> None:
    with Ledger(db, max_attempts=3) as led:
        led.submit(T, "flaky", "conv-1", {})
        first = led.claim()
        assert led.release(first, TimeoutError("the model timed out"))
        waiting = led.get_command(T, "flaky")
        assert (waiting.status, waiting.error) == ("accepted", "TimeoutError: the model timed out")
        done = led.record_result(led.claim(), "fine")
        assert (done.status, done.result, done.error) == ("done", "fine", None)
        assert [r.outcome for r in led.list_runs(T, "conv-1")] == ["error", "done"]  # the history stays


def test_f3_a_command_that_kills_its_worker_every_time_dies_too(db: Path) -> None:
    clock = ManualClock()
    with Ledger(db, clock=clock, max_attempts=2) as led:
        led.submit(T, "crasher", "conv-1", {})
        led.submit(T, "next", "conv-1", {})
        for attempt in (1, 2):
            assert led.claim().attempt == attempt  # the worker dies: no result, no release
            clock.advance(31)
        nxt = led.claim()
        assert nxt.command_id == "next"
        dead = led.get_command(T, "crasher")
        assert dead.status == "dead" and "attempt 2 ended without a result" in dead.error


# --------------------------------------------------------------------------- F4 the dispatcher
def test_f4_run_dispatcher_drains_and_a_dead_dispatchers_work_is_picked_up(db: Path) -> None:
    clock = ManualClock()
    with Ledger(db, clock=clock, name="crashed") as crashed, Ledger(db, clock=clock, name="live") as live:
        for i in range(3):
            crashed.submit(T, f"cmd-{i}", "conv-1" if i < 2 else "conv-2", {"i": i})
        lost = crashed.claim()  # claimed, then its process died: nothing renews the lease
        assert lost.command_id == "cmd-0"
        stop = threading.Event()
        seen: list[tuple[str, int]] = []

        def handle(d: Delivery) -> str:
            seen.append((d.command_id, d.attempt))
            return "ok"

        loop = threading.Thread(target=lambda: run_dispatcher(live, handle, poll=0.005, until_drained=True,
                                                              max_seconds=20, stop=stop))
        loop.start()
        deadline = time.monotonic() + 10
        while ("cmd-2", 1) not in seen and time.monotonic() < deadline:
            time.sleep(0.005)
        assert ("cmd-0", 2) not in seen  # still leased by the dead dispatcher
        clock.advance(31)
        loop.join(15)
        stop.set()
        assert not loop.is_alive()
        assert sorted(seen) == [("cmd-0", 2), ("cmd-1", 1), ("cmd-2", 1)]
        assert live.pending_count() == 0


# --------------------------------------------------------------------------- F10 claims
# CPU time of this thread, not wall time: with synchronous=OFF a claim does no waiting of
# its own, and a busy machine (a parallel test run) that preempts the thread adds nothing.
def _claim_seconds(led: Ledger, repeat: int = 60) -> float:
    times = []
    for _ in range(repeat):
        start = time.thread_time()
        assert led.claim() is None
        times.append(time.thread_time() - start)
    return sorted(times)[len(times) // 2]


def _queue_behind(led: Ledger, conversation_id: str, start: int, stop: int) -> None:
    """Queue commands q-start..q-(stop-1) on a conversation in one transaction (fast setup).

    The rows are what ``submit`` writes (``ready`` NULL): the next claim queues them.
    """
    thread_id = led.get_conversation(T, conversation_id).thread_id
    with closing(sqlite3.connect(led.path, isolation_level=None)) as conn:
        conn.execute("BEGIN IMMEDIATE")
        for i in range(start, stop):
            conn.execute("INSERT INTO commands (tenant_id, command_id, conversation_id, thread_id, run_id, "
                         "fingerprint, payload, created_at) VALUES (?, ?, ?, ?, ?, 'f', '{}', 'now')",
                         (T, f"q-{i}", conversation_id, thread_id, f"run-{i}"))
        conn.execute("COMMIT")


def _queue_seconds(led: Ledger) -> float:
    """The claim that puts newly accepted commands into their queues (once per command)."""
    start = time.thread_time()
    assert led.claim() is None
    return time.thread_time() - start


def test_f10_claim_time_stays_flat_from_2000_to_20000_queued(tmp_path: Path) -> None:
    with Ledger(tmp_path / "deep.db", synchronous="OFF") as led:
        led.create_conversation(T, "deep")
        led.submit(T, "head", "deep", {})
        assert led.claim().command_id == "head"  # running: the rest queues behind it
        led.submit(T, "q-0", "deep", {})  # one queued through the front door
        _queue_behind(led, "deep", 1, 2000)
        queued_2000 = _queue_seconds(led)
        shallow = _claim_seconds(led)
        _queue_behind(led, "deep", 2000, 20000)
        queued_18000 = _queue_seconds(led)
        assert led.pending_count() == 20001
        deep = _claim_seconds(led)
        with closing(sqlite3.connect(led.path)) as conn:  # all queued, behind the running head
            by_ready = conn.execute("SELECT ready, COUNT(*) FROM commands GROUP BY ready").fetchall()
        assert by_ready == [(0, 20000), (1, 1)]
    ratio = deep / shallow
    print(f"claim median: {shallow * 1e3:.3f} ms at 2,000 queued, {deep * 1e3:.3f} ms at 20,000: "
          f"ratio {ratio:.2f}; queueing: {queued_2000 * 1e3:.1f} ms for 2,000 new, {queued_18000 * 1e3:.1f} ms "
          "for 18,000")
    assert ratio < 2.5, f"claims slowed down {ratio:.1f}x with a 10x deeper queue"
    # queueing is paid once per command: per command, 18,000 at once cost about what 2,000 did
    assert queued_18000 / 18000 < 3 * queued_2000 / 2000, "queueing a command got dearer with depth"
