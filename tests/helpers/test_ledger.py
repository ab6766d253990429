"""Tests for helpers.ledger: races, crashes, FIFO, hostile input and properties."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import unicodedata
import uuid
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from course.ledger_bench import benchmark_ledger, rows_for_table
from helpers.ledger import (
    CRASH_POINTS,
    MIN_SQLITE,
    RUN_NAMESPACE,
    ConversationNotFound,
    Delivery,
    Forbidden,
    InvalidDelivery,
    InvalidId,
    InvalidPayload,
    Ledger,
    LedgerError,
    ManualClock,
    PayloadMismatch,
    SimulatedCrash,
    canonical_json,
    fingerprint,
    new_command_id,
    new_time_ordered_id,
    payload_json,
    run_id_for,
    stable_id,
    submit_command,
    utc_now,
    validate_id,
)
from helpers.ledger import acceptance as ledger_acceptance
from helpers.ledger import ids as ledger_ids

T = "tenant-a"


def dump(path: Path) -> dict[str, list[tuple]]:
    """Every row of every table (sqlite_sequence included), for before/after comparisons."""
    with closing(sqlite3.connect(path)) as conn:
        names = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {n: conn.execute(f'SELECT * FROM "{n}" ORDER BY rowid').fetchall() for n in names}


def count(path: Path, table: str) -> int:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def run_threads(n: int, target, *args) -> None:
    """Start n threads on target(i, *args); re-raise the first worker error."""
    errors: list[BaseException] = []

    def wrap(i: int) -> None:
        try:
            target(i, *args)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a worker thread hung"
    if errors:
        raise errors[0]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "ledger.db"


@pytest.fixture
def ledger(db: Path):
    with Ledger(db) as led:
        led.create_conversation(T, "conv-1")
        led.create_conversation(T, "conv-2")
        led.create_conversation("tenant-b", "conv-b")
        yield led


# --------------------------------------------------------------------------- the race
class NaiveLedger:
    """Check-then-insert, the pattern the ledger avoids. ``between`` runs after the SELECT."""

    def __init__(self, path: Path, *, unique: bool, between=None) -> None:
        self.path, self.between = path, between
        constraint = ", UNIQUE (tenant_id, command_id)" if unique else ""
        with closing(sqlite3.connect(path)) as conn:
            conn.execute("CREATE TABLE commands (tenant_id TEXT, command_id TEXT, "
                         f"payload TEXT{constraint})")
            conn.commit()

    def submit(self, tenant_id: str, command_id: str, payload: str) -> bool:
        with closing(sqlite3.connect(self.path, timeout=10, isolation_level=None)) as conn:
            seen = conn.execute("SELECT 1 FROM commands WHERE tenant_id = ? AND command_id = ?",
                                (tenant_id, command_id)).fetchone()
            if seen:
                return False
            if self.between:
                self.between()
            conn.execute("INSERT INTO commands VALUES (?, ?, ?)", (tenant_id, command_id, payload))
            return True


@pytest.mark.parametrize("unique", [False, True])
def test_naive_check_then_insert_loses_the_race(tmp_path: Path, unique: bool) -> None:
    # The barrier forces both callers past the SELECT before either INSERTs: no luck needed.
    barrier = threading.Barrier(2, timeout=10)
    naive = NaiveLedger(tmp_path / "naive.db", unique=unique, between=barrier.wait)
    outcomes: list[object] = []

    def call(i: int) -> None:
        try:
            outcomes.append(naive.submit(T, "cmd-1", "{}"))
        except sqlite3.IntegrityError as exc:
            outcomes.append(exc)

    run_threads(2, call)
    if unique:  # the constraint saves the data, but one caller gets a raw error, not the record
        assert True in outcomes and any(isinstance(o, sqlite3.IntegrityError) for o in outcomes)
        assert count(tmp_path / "naive.db", "commands") == 1
    else:  # both callers "accepted" the command: two runs would start
        assert outcomes == [True, True]
        assert count(tmp_path / "naive.db", "commands") == 2


@pytest.mark.parametrize("shared", [True, False], ids=["one-ledger", "ledger-per-thread"])
def test_sixteen_threads_race_one_key(db: Path, ledger: Ledger, shared: bool) -> None:
    # One shared Ledger (a connection per thread), or one Ledger per thread as separate
    # processes would have. The second variant does fewer rounds: SQLite's busy handler
    # sleeps with back-off between Ledger objects, which makes it slower and noisier.
    rounds = 200 if shared else 100
    barrier = threading.Barrier(16, timeout=30)
    results: list[list] = [[] for _ in range(16)]
    payload = {"text": "Book Lisbon → Porto", "seats": 2}

    def hammer(i: int) -> None:
        led = ledger if shared else Ledger(db)
        try:
            barrier.wait()
            for _ in range(rounds):
                results[i].append(led.submit(T, "cmd-race", "conv-1", payload))
        finally:
            if not shared:
                led.close()

    run_threads(16, hammer)
    flat = [r for rs in results for r in rs]
    assert len(flat) == 16 * rounds
    assert sum(r.created for r in flat) == 1
    assert all(r.record == flat[0].record for r in flat)  # every caller sees the same record
    assert count(db, "commands") == 1
    with closing(sqlite3.connect(db)) as conn:  # one pending row, not queued yet (a claim queues it), never leased
        assert conn.execute("SELECT status, ready, attempt FROM commands").fetchall() == [("accepted", None, 0)]
    runs: list[Delivery] = []
    ledger.dispatch_pending(runs.append)
    ledger.dispatch_pending(runs.append)
    assert [d.command_id for d in runs] == ["cmd-race"]
    assert runs[0].run_id == flat[0].record.run_id == stable_id(RUN_NAMESPACE, f"{T}/cmd-race")
    assert runs[0].run_id == run_id_for(T, "cmd-race")


# --------------------------------------------------------------------------- semantics
def test_retry_returns_stored_record_and_result(ledger: Ledger, db: Path) -> None:
    first = ledger.submit(T, "cmd-1", "conv-1", {"q": "hotels"})
    assert first.created and first.record.status == "accepted"
    [d] = ledger.dispatch_pending(lambda d: {"answer": 3})
    again = ledger.submit(T, "cmd-1", "conv-1", {"q": "hotels"})
    assert not again.created
    assert again.record.status == "done" and again.result == {"answer": 3}
    assert again.record.run_id == first.record.run_id == d.run_id == d.idempotency_key
    assert ledger.dispatch_pending(lambda d: pytest.fail("no second run")) == []
    assert count(db, "commands") == 1


def test_regenerate_is_a_new_command_and_a_new_run(ledger: Ledger) -> None:
    a = ledger.submit(T, new_command_id(), "conv-1", {"regenerate_of": "msg-1"})
    b = ledger.submit(T, new_command_id(), "conv-1", {"regenerate_of": "msg-1"})
    assert a.created and b.created and a.record.run_id != b.record.run_id
    assert b.record.seq > a.record.seq
    seen: list[str] = []

    def deliver(d: Delivery) -> str:
        seen.append(d.run_id)
        return "ok"

    ledger.dispatch_pending(deliver)
    assert seen == [a.record.run_id, b.record.run_id]


def test_payload_mismatch_names_the_key_and_writes_nothing(ledger: Ledger, db: Path) -> None:
    ledger.submit(T, "cmd-77", "conv-1", {"city": "Lisbon"})
    before = dump(db)
    with pytest.raises(PayloadMismatch) as info:
        ledger.submit(T, "cmd-77", "conv-1", {"city": "Porto"})
    assert "cmd-77" in str(info.value) and T in str(info.value)
    assert (info.value.tenant_id, info.value.command_id) == (T, "cmd-77")
    assert isinstance(info.value, LedgerError)
    with pytest.raises(PayloadMismatch, match="conv-1"):  # same key aimed at another thread
        ledger.submit(T, "cmd-77", "conv-2", {"city": "Lisbon"})
    assert dump(db) == before


def test_same_command_id_in_two_tenants_is_two_commands(ledger: Ledger) -> None:
    a = ledger.submit(T, "cmd-1", "conv-1", {"x": 1})
    b = ledger.submit("tenant-b", "cmd-1", "conv-b", {"x": 2})
    assert a.created and b.created and a.record.run_id != b.record.run_id
    assert a.record.thread_id != b.record.thread_id


def test_conversations_get_opaque_server_side_threads(ledger: Ledger) -> None:
    conv = ledger.get_conversation(T, "conv-1")
    assert uuid.UUID(conv.thread_id).version == 4
    assert ledger.create_conversation(T, "conv-1") == conv  # idempotent
    other = ledger.create_conversation("tenant-b", "conv-1")  # same name, other tenant
    assert other.thread_id != conv.thread_id
    assert ledger.submit(T, "c", "conv-1", {}).record.thread_id == conv.thread_id


def test_record_result_is_idempotent_first_result_wins(ledger: Ledger, db: Path) -> None:
    ledger.submit(T, "cmd-1", "conv-1", {})
    delivery = ledger.claim()
    done = ledger.record_result(delivery, {"n": 1})
    before = dump(db)
    assert ledger.record_result(delivery, {"n": 1}) == done
    assert ledger.record_result(delivery, {"n": 2}, status="failed") == done
    assert dump(db) == before and done.status == "done" and done.result == {"n": 1}
    with pytest.raises(InvalidDelivery):  # no claim made it: refused like any forged delivery
        ledger.record_result(Delivery(999, 1, T, "nope", "conv-1", "t", "r", {}), {})
    with pytest.raises(ValueError):
        ledger.record_result(delivery, {}, status="running")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- FIFO
def test_second_command_on_a_busy_thread_waits(ledger: Ledger) -> None:
    a = ledger.submit(T, "a", "conv-1", {"n": 1}).record
    b = ledger.submit(T, "b", "conv-1", {"n": 2})
    c = ledger.submit(T, "c", "conv-2", {"n": 3}).record
    d = ledger.submit(T, "d", "conv-1", {"n": 4}).record
    assert b.created  # queued, not rejected as a duplicate
    first = [ledger.claim(), ledger.claim()]
    assert [x.command_id for x in first] == ["a", "c"]  # heads of both threads
    assert ledger.get_command(T, "b").status == "accepted"
    assert ledger.claim() is None  # a still running
    ledger.record_result(first[0], "ok")
    second = ledger.claim()
    assert second.command_id == "b"
    ledger.record_result(second, "boom", status="failed")  # failure also unblocks
    assert [x.command_id for x in ledger.dispatch_pending(lambda d: None)] == ["d"]
    assert [r.command_id for r in ledger.list_commands(T, "conv-1")] == ["a", "b", "d"]
    assert a.seq < b.record.seq < c.seq < d.seq


def test_concurrent_commands_on_one_thread_run_fifo_one_at_a_time(ledger: Ledger) -> None:
    barrier = threading.Barrier(8, timeout=30)
    accepted: list = []

    def submitter(i: int) -> None:
        barrier.wait()
        for j in range(5):
            accepted.append(ledger.submit(T, f"cmd-{i}-{j}", "conv-1", {"i": i, "j": j}))

    run_threads(8, submitter)
    assert len(accepted) == 40 and all(r.created for r in accepted)
    expected = [r.record.command_id for r in sorted(accepted, key=lambda r: r.record.seq)]

    lock = threading.Lock()
    order: list[str] = []
    in_flight = [0, 0]  # current, max

    def deliver(d: Delivery) -> dict:
        with lock:
            in_flight[0] += 1
            in_flight[1] = max(in_flight)
            order.append(d.command_id)
        time.sleep(0.0005)  # widen the window in which a second run could sneak in
        with lock:
            in_flight[0] -= 1
        return {"seq": d.seq}

    def dispatcher(i: int) -> None:
        deadline = time.monotonic() + 30
        while len(order) < 40 and time.monotonic() < deadline:
            if not ledger.dispatch_pending(deliver):
                time.sleep(0.001)

    run_threads(4, dispatcher)
    assert order == expected
    assert in_flight[1] == 1
    assert all(r.status == "done" for r in ledger.list_commands(T, "conv-1"))


# --------------------------------------------------------------------------- crashes
COMMANDS = [("conv-1", "k1", {"n": 1}), ("conv-1", "k2", {"n": 2}),
            ("conv-2", "k3", {"n": 3}), ("conv-1", "k4", {"n": 4})]


class Receiver:
    """A worker with a durable dedupe store (``applied``) keyed by run_id."""

    def __init__(self) -> None:
        self.deliveries: Counter[str] = Counter()  # raw, at-least-once
        self.effects: Counter[str] = Counter()  # what the outside world sees
        self.applied: dict[str, object] = {}

    def __call__(self, d: Delivery) -> object:
        self.deliveries[d.command_id] += 1
        if d.run_id not in self.applied:
            self.effects[d.command_id] += 1
            self.applied[d.run_id] = {"echo": d.payload}
        return self.applied[d.run_id]


def _drive(receiver: Receiver, ledger: Ledger) -> None:
    for conv, key, payload in COMMANDS:  # the client retries every submit after a crash
        ledger.submit(T, key, conv, payload)
    while ledger.dispatch_pending(receiver):
        pass


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_crash_then_restart_applies_every_command_once(db: Path, point: str) -> None:
    with Ledger(db) as setup:
        setup.create_conversation(T, "conv-1")
        setup.create_conversation(T, "conv-2")
    receiver = Receiver()
    crashing = Ledger(db, crash_at=point)  # default 30 s leases: the crash ends them
    with pytest.raises(SimulatedCrash) as info:
        _drive(receiver, crashing)
    assert info.value.point == point
    crashing.close()
    with Ledger(db) as restarted:
        _drive(receiver, restarted)
        _drive(receiver, restarted)  # a second restart changes nothing
        records = [restarted.get_command(T, key) for _, key, _ in COMMANDS]

    assert receiver.effects == Counter({key: 1 for _, key, _ in COMMANDS})
    assert [r.status for r in records] == ["done"] * 4
    assert [r.result for r in records] == [{"echo": p} for _, _, p in COMMANDS]
    assert count(db, "commands") == 4
    with closing(sqlite3.connect(db)) as conn:  # nothing left queued or leased
        assert conn.execute("SELECT COUNT(*) FROM commands WHERE status != 'done' OR ready != 0 "
                            "OR lease_expires != 0").fetchone()[0] == 0
    if point in {"after_deliver", "before_mark_done"}:
        # delivery really happened twice: only the receiver's dedupe kept the effect single
        assert sum(receiver.deliveries.values()) > len(COMMANDS)


def test_unknown_crash_point_is_rejected(db: Path) -> None:
    with pytest.raises(ValueError, match="crash point"):
        Ledger(db, crash_at="after_lunch")


def test_lease_blocks_a_second_dispatcher_until_it_expires(db: Path) -> None:
    clock = ManualClock()
    with Ledger(db, clock=clock) as first, Ledger(db, clock=clock) as second:
        first.create_conversation(T, "conv-1")
        first.submit(T, "cmd-1", "conv-1", {})
        assert first.claim().attempt == 1
        assert second.claim() is None  # still leased
        clock.advance(first.lease_seconds)  # no result arrived within the lease: deliver again
        assert second.claim().attempt == 2


def test_deliver_error_releases_the_lease(ledger: Ledger) -> None:
    ledger.submit(T, "cmd-1", "conv-1", {})
    calls: list[int] = []

    def flaky(d: Delivery) -> None:
        calls.append(d.attempt)
        if len(calls) == 1:
            raise RuntimeError("queue unavailable")

    assert ledger.dispatch_pending(flaky) == []  # not retried within the same call
    assert ledger.get_command(T, "cmd-1").status == "accepted"
    assert [d.attempt for d in ledger.dispatch_pending(flaky)] == [2]
    assert calls == [1, 2]


# --------------------------------------------------------------------------- hostile input
HOSTILE_IDS = [
    "x'; DROP TABLE commands; --", 'a"b', "semi;colon", "with space", "nul\x00byte", "",
    "x" * 10_000, "é", "a/b", "line\nbreak", 42, None, b"bytes-id", 3.5, ["list"],
]


@pytest.mark.parametrize("field", ["tenant_id", "command_id", "conversation_id"])
@pytest.mark.parametrize("bad", HOSTILE_IDS, ids=lambda v: repr(v)[:20])
def test_hostile_ids_are_rejected_and_nothing_changes(ledger: Ledger, db: Path, field: str,
                                                      bad: object) -> None:
    ledger.submit(T, "existing", "conv-1", {"x": 1})
    before = dump(db)
    args = {"tenant_id": T, "command_id": "cmd-new", "conversation_id": "conv-1", field: bad}
    with pytest.raises(InvalidId) as info:
        ledger.submit(args["tenant_id"], args["command_id"], args["conversation_id"], {"p": 1})
    assert info.value.field == field and field in str(info.value)
    assert len(str(info.value)) < 200  # a 10 kB id is not echoed back
    if field != "command_id":
        with pytest.raises(InvalidId):
            ledger.create_conversation(args["tenant_id"], args["conversation_id"])
    assert dump(db) == before


@pytest.mark.parametrize("tenant, conv", [(T, "conv-unknown"), ("tenant-b", "conv-1"),
                                          (T, "conv-b")])
def test_unknown_or_foreign_conversation_is_refused(ledger: Ledger, db: Path, tenant: str,
                                                    conv: str) -> None:
    before = dump(db)
    with pytest.raises(ConversationNotFound) as info:
        ledger.submit(tenant, "cmd-1", conv, {"x": 1})
    assert isinstance(info.value, Forbidden)
    assert conv in str(info.value) and tenant in str(info.value)
    with pytest.raises(ConversationNotFound):
        ledger.list_commands(tenant, conv)
    assert dump(db) == before


def test_valid_but_sql_looking_ids_are_plain_data(ledger: Ledger, db: Path) -> None:
    for weird in ["--", "1:2", "..", "a.b-c_d:e", "x" * 128]:
        ledger.create_conversation(weird, weird)
        rec = ledger.submit(weird, weird, weird, {"id": weird}).record
        assert (rec.tenant_id, rec.command_id, rec.conversation_id) == (weird, weird, weird)
    assert count(db, "commands") == 5


@pytest.mark.parametrize("payload", [
    float("nan"), {"x": float("inf")}, {"b": b"raw"}, {1: "int key"}, {"s": {1, 2}},
    {"e\u0301": 1, "\u00e9": 2}, "\ud800", object(),
])
def test_non_json_payloads_are_rejected(ledger: Ledger, db: Path, payload: object) -> None:
    before = dump(db)
    with pytest.raises(InvalidPayload) as info:
        ledger.submit(T, "cmd-1", "conv-1", payload)
    assert "payload" in str(info.value)
    assert dump(db) == before


def test_id_helpers() -> None:
    assert uuid.UUID(new_command_id()).version == 4
    a, b = new_time_ordered_id(), new_time_ordered_id()
    assert uuid.UUID(a).version == 7 and a != b
    assert stable_id(RUN_NAMESPACE, "x") == stable_id(str(RUN_NAMESPACE), "x")
    assert uuid.UUID(stable_id(RUN_NAMESPACE, "x")).version == 5
    assert validate_id("f", "ok-1") == "ok-1"


id_text = st.text("abcXYZ019._:-", min_size=1, max_size=128)


@settings(max_examples=200, deadline=None, database=None)
@given(tenant=id_text, command=id_text)
def test_run_id_is_the_uuid5_of_tenant_and_command(tenant: str, command: str) -> None:
    run_id, name = run_id_for(tenant, command), f"{tenant}/{command}"
    assert run_id == str(uuid.uuid5(RUN_NAMESPACE, name)) == stable_id(RUN_NAMESPACE, name)
    assert uuid.UUID(run_id).version == 5 and uuid.UUID(run_id).variant == uuid.RFC_4122


def test_accepting_a_command_is_one_statement(ledger: Ledger, db: Path) -> None:
    """The hot path: a new command costs one statement (so one commit); only a call that inserted nothing reads."""
    thread = ledger.get_conversation(T, "conv-1").thread_id
    args = ('{"q":1}', fingerprint({"q": 1}), run_id_for(T, "cmd-1"), utc_now())
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        calls = {"new": (T, "cmd-1", "conv-1", thread), "retry": (T, "cmd-1", "conv-1", thread),
                 "foreign conversation, its thread guessed": ("tenant-b", "cmd-1", "conv-1", thread),
                 "another thread": (T, "cmd-2", "conv-1", str(uuid.uuid4()))}
        seen = {}
        for call, (tenant, key, conversation, thread_id) in calls.items():
            statements.clear()
            row, created = submit_command(conn, tenant, key, conversation, thread_id, *args)
            seen[call] = (created, row is not None, [s.split()[0] for s in statements])
    assert seen == {"new": (True, True, ["INSERT"]), "retry": (False, True, ["INSERT", "SELECT", "SELECT"]),
                    "foreign conversation, its thread guessed": (False, False, ["INSERT", "SELECT"]),
                    "another thread": (False, False, ["INSERT", "SELECT"])}
    assert count(db, "commands") == 1


def _statements_of(ledger: Ledger) -> list[str]:
    """From now on, the first word of every statement ``ledger``'s connections run."""
    statements: list[str] = []
    get = ledger.tx.pool.get

    def traced() -> sqlite3.Connection:
        conn = get()
        conn.set_trace_callback(lambda sql: statements.append(sql.split()[0]))
        return conn
    ledger.tx.pool.get = traced  # type: ignore[method-assign]
    return statements


def test_a_ledger_reads_a_conversation_s_thread_once_then_accepts_with_one_statement(ledger: Ledger, db: Path) -> None:
    with Ledger(db) as other:  # a fresh object: it has read no conversation yet
        statements = _statements_of(other)
        other.submit(T, "cmd-1", "conv-1", {"n": 1})
        assert statements == ["SELECT", "INSERT"]  # the conversation's thread, then the insert
        statements.clear()
        other.submit(T, "cmd-2", "conv-1", {"n": 2})
        assert statements == ["INSERT"]
        statements.clear()
        with pytest.raises(ConversationNotFound):
            other.submit("tenant-b", "cmd-3", "conv-1", {"n": 3})  # another tenant's: nothing kept, nothing inserted
        assert statements == ["SELECT"] and count(db, "commands") == 2


def test_a_ledger_keeps_the_thread_it_reads_or_creates_and_bounds_what_it_keeps(
        ledger: Ledger, db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Ledger(db) as other:
        other.get_conversation(T, "conv-1")
        other.create_conversation(T, "conv-2")
        statements = _statements_of(other)
        other.submit(T, "cmd-1", "conv-1", {"n": 1})
        other.submit(T, "cmd-2", "conv-2", {"n": 2})
        assert statements == ["INSERT", "INSERT"]  # both threads were kept: no read before either insert
    monkeypatch.setattr(ledger_acceptance, "MAX_KEPT_THREADS", 2)
    with Ledger(db) as small:
        for n in range(5):
            small.create_conversation(T, f"conv-kept-{n}")
            assert len(small.acceptance._threads) <= 2


def _changes_the_thread_after_each_read(ledger: Ledger, db: Path, times: int) -> list[str]:
    """Make the ledger's next ``times`` reads of a conversation race a change of its thread."""
    read, threads = ledger.acceptance._thread_of, []
    ledger.acceptance._threads.clear()  # the fixture's create_conversation kept the thread: read it from now on

    def racing(tenant_id: str, conversation_id: str) -> str:
        thread = read(tenant_id, conversation_id)
        if len(threads) < times:
            threads.append(f"rebuilt-{len(threads)}")
            with closing(sqlite3.connect(db, isolation_level=None)) as conn:
                conn.execute("UPDATE conversations SET thread_id = ? WHERE conversation_id = ?",
                             (threads[-1], conversation_id))
        return thread
    ledger.acceptance._thread_of = racing  # type: ignore[method-assign]
    return threads


def test_a_thread_that_changes_during_the_call_is_read_again(ledger: Ledger, db: Path) -> None:
    threads = _changes_the_thread_after_each_read(ledger, db, 2)
    result = ledger.submit(T, "cmd-1", "conv-1", {"n": 1})  # read, changed; insert misses; read, changed; ...
    assert result.created and result.record.thread_id == threads[-1] == ledger.get_command(T, "cmd-1").thread_id


def test_a_thread_that_keeps_changing_gives_up_with_nothing_accepted(ledger: Ledger, db: Path) -> None:
    _changes_the_thread_after_each_read(ledger, db, 1000)
    with pytest.raises(LedgerError, match=r"changed its thread 3 times during this call; nothing was accepted"):
        ledger.submit(T, "cmd-1", "conv-1", {"n": 1})
    assert count(db, "commands") == 0


def test_a_kept_thread_that_no_longer_matches_is_read_again(ledger: Ledger, db: Path) -> None:
    """The kept thread only saves a read: a conversation changed behind the ledger's back is read again."""
    ledger.submit(T, "cmd-1", "conv-1", {"n": 1})
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute("UPDATE conversations SET thread_id = 'rebuilt' WHERE conversation_id = 'conv-1'")
    second = ledger.submit(T, "cmd-2", "conv-1", {"n": 2})
    assert second.created and second.record.thread_id == "rebuilt" == ledger.get_command(T, "cmd-2").thread_id
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:  # an erasure: its commands, then itself
        conn.execute("DELETE FROM commands WHERE conversation_id = 'conv-1'")
        conn.execute("DELETE FROM conversations WHERE conversation_id = 'conv-1'")
    with pytest.raises(ConversationNotFound):
        ledger.submit(T, "cmd-3", "conv-1", {"n": 3})
    assert count(db, "commands") == 0


def _pages_written(conn: sqlite3.Connection, write: Callable[[], object]) -> int:
    """WAL frames (pages) that ``write`` commits: the log is emptied first, then counted."""
    assert conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0  # 0: not blocked
    write()
    return conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]


def test_an_accepted_command_writes_two_pages_like_a_bare_insert(ledger: Ledger, db: Path) -> None:
    """Nothing else on the hot path: the command's row and its key, as a plain keyed insert.

    Queueing it (the queue and claim indexes) is the next claim's work, off the request path.
    """
    ledger.create_conversation(T, "conv-2")
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute("CREATE TABLE plain (tenant_id TEXT, command_id TEXT, payload TEXT, "
                     "PRIMARY KEY (tenant_id, command_id))")
        pages = {
            "bare INSERT": _pages_written(conn, lambda: conn.execute(
                "INSERT INTO plain VALUES (?, ?, ?)", (T, "cmd-1", '{"q":1}'))),
            "new command": _pages_written(conn, lambda: ledger.submit(T, "cmd-1", "conv-1", {"q": 1})),
            "another thread": _pages_written(conn, lambda: ledger.submit(T, "cmd-2", "conv-2", {"q": 2})),
            "queued behind": _pages_written(conn, lambda: ledger.submit(T, "cmd-3", "conv-1", {"q": 3})),
            "retry": _pages_written(conn, lambda: ledger.submit(T, "cmd-1", "conv-1", {"q": 1})),
        }
        assert pages == {"bare INSERT": 2, "new command": 2, "another thread": 2, "queued behind": 2, "retry": 0}
        assert conn.execute("SELECT command_id, ready FROM commands ORDER BY seq").fetchall() == [
            ("cmd-1", None), ("cmd-2", None), ("cmd-3", None)]
        first = ledger.claim()  # the claim queues all three in seq order, then leases the oldest head
        assert conn.execute("SELECT command_id, ready FROM commands ORDER BY seq").fetchall() == [
            ("cmd-1", 1), ("cmd-2", 1), ("cmd-3", 0)]
    assert first.command_id == "cmd-1"
    # the record a created command gets (its seq from the insert, the rest from the call) is the stored row
    created = ledger.submit(T, "cmd-4", "conv-1", {"q": 4, "tuple": (1, 2)})
    assert created.created and created.record == ledger.get_command(T, "cmd-4")
    assert created.record.payload == {"q": 4, "tuple": [1, 2]}  # as stored: JSON has no tuples


def test_a_command_accepted_while_its_thread_runs_waits_for_the_head(ledger: Ledger) -> None:
    """Queueing must not make a second head: FIFO per thread holds across the cursor."""
    ledger.submit(T, "a", "conv-1", {"n": 1})
    head = ledger.claim()
    assert head.command_id == "a"
    ledger.submit(T, "b", "conv-1", {"n": 2})  # accepted while a runs: queued by the next claim
    assert ledger.claim() is None  # b is queued behind a, not a head
    ledger.record_result(head, "ok")
    assert ledger.claim().command_id == "b"


def test_an_old_sqlite_is_refused_before_the_file_is_touched(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 23, 1))
    monkeypatch.setattr(sqlite3, "sqlite_version", "3.23.1")
    with pytest.raises(LedgerError, match=r"needs SQLite 3\.24\.0 or newer .*uses SQLite 3\.23\.1"):
        Ledger(db)
    assert not db.exists() and MIN_SQLITE == (3, 24, 0)


# --------------------------------------------------------------------------- properties
json_leaf = (st.none() | st.booleans() | st.integers(-10**6, 10**6)
             | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8))
nfc_text = st.text(max_size=6).map(lambda s: unicodedata.normalize("NFC", s))
json_value = st.recursive(
    json_leaf, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(nfc_text, kids, max_size=3),
    max_leaves=12)
FAST = settings(max_examples=50, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


def _nfd(value):
    if isinstance(value, str):
        return unicodedata.normalize("NFD", value)
    if isinstance(value, dict):
        return {_nfd(k): _nfd(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nfd(v) for v in value]
    return value


def _reversed_keys(value):
    if isinstance(value, dict):
        return {k: _reversed_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(v) for v in value]
    return value


@FAST
@given(json_value)
def test_fingerprint_ignores_key_order_and_unicode_form(value) -> None:
    fp = fingerprint(value)
    assert fingerprint(_reversed_keys(value)) == fp
    assert fingerprint(_nfd(value)) == fp
    assert " " not in canonical_json({"a": [1, 2]})


@FAST
@given(st.dictionaries(nfc_text, st.integers() | nfc_text, max_size=4),
       st.dictionaries(nfc_text, st.integers() | nfc_text, max_size=4))
def test_different_simple_payloads_have_different_fingerprints(a, b) -> None:
    assume(a != b)
    assert fingerprint(a) != fingerprint(b)


@pytest.fixture(scope="module")
def shared_ledger(tmp_path_factory):
    with Ledger(tmp_path_factory.mktemp("prop") / "prop.db") as led:
        led.create_conversation(T, "conv-1")
        yield led


@FAST
@given(payload=json_value)
def test_submit_twice_is_one_row_and_one_record(shared_ledger: Ledger, payload) -> None:
    key = new_command_id()
    first = shared_ledger.submit(T, key, "conv-1", payload)
    second = shared_ledger.submit(T, key, "conv-1", _nfd(_reversed_keys(payload)))
    assert first.created and not second.created
    assert second.record == first.record
    with closing(sqlite3.connect(shared_ledger.path)) as conn:
        rows = conn.execute("SELECT COUNT(*) FROM commands WHERE tenant_id = ? AND command_id = ?",
                            (T, key)).fetchone()
    assert rows == (1,)


# --------------------------------------------------------------------------- benchmark
def test_benchmark_small(tmp_path: Path) -> None:
    out = benchmark_ledger(tmp_path, commands=30, processes=2, per_process=16, rounds=4, repeats=3)
    single, procs = out["single_writer"], out["processes"]
    assert out["synchronous"] == "FULL"
    assert single["rows_each"] == 30 and procs["rows_each"] == 32 and procs["processes"] == 2
    assert single["repeats"] == 3 and procs["repeats"] == 4  # 3 blocks of rows; 4 rounds
    for part in (single, procs):
        assert part["ledger_per_s"] > 0 and part["plain_per_s"] > 0
        assert 0 < part["ratio_low"] <= part["ratio"] <= part["ratio_high"]
    assert single["sql_per_s"] > 0 and single["sql_ratio_low"] <= single["sql_ratio"] <= single["sql_ratio_high"]
    assert [row["ratio: median (range)"].count("(") for row in rows_for_table(out)] == [1, 1, 1]
    with pytest.raises(ValueError, match="rounds must be >= 1"):
        benchmark_ledger(tmp_path, rounds=0)
    with closing(sqlite3.connect(next(tmp_path.glob("bench-single-*.db")))) as conn:
        assert conn.execute("SELECT COUNT(*) FROM commands").fetchone()[0] == 100  # 2 x (20 warm-up + 30)
        assert conn.execute("SELECT COUNT(*) FROM plain").fetchone()[0] == 50


def _pure_python_json(value, sort_keys: bool) -> str:
    # iterencode() without _one_shot never takes the C encoder
    options = json.JSONEncoder(sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return "".join(options.iterencode(value))


@FAST
@given(json_value)
def test_the_ledger_s_json_is_the_pure_python_encoder_s(value) -> None:
    """The encoders built once (C, when the interpreter has it) write what the pure-Python encoder writes."""
    for sort_keys in (False, True):
        assert ledger_ids._ENCODERS[sort_keys](value) == _pure_python_json(value, sort_keys)
    assert payload_json(value)[0] == _pure_python_json(value, False)


def test_the_json_encoder_falls_back_to_pure_python(monkeypatch: pytest.MonkeyPatch) -> None:
    sample = {"b": [1.5, -0.0, 10**30, None, (True,)], "a": "\u00e9\U0001f600\n"}
    assert ledger_ids._ENCODERS[True].__name__ == "<lambda>"  # this interpreter has the C encoder, and it is used
    monkeypatch.setattr(ledger_ids, "c_make_encoder", None)
    for sort_keys in (False, True):
        fallback = ledger_ids._json_encoder(sort_keys)
        assert fallback.__name__ == "encode" and fallback(sample) == _pure_python_json(sample, sort_keys)


def test_utc_now_is_sqlite_s_datetime_now(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ledger_acceptance, "_this_second", (-1, ""))
    try:
        with monkeypatch.context() as zone:
            if hasattr(time, "tzset"):  # UTC even where local time is not (gmtime, not localtime)
                zone.setenv("TZ", "Asia/Tokyo")
                time.tzset()
            with closing(sqlite3.connect(":memory:")) as conn:
                before = conn.execute("SELECT datetime('now')").fetchone()[0]
                now = utc_now()
                after = conn.execute("SELECT datetime('now')").fetchone()[0]
    finally:
        if hasattr(time, "tzset"):
            time.tzset()  # the test process's own zone again
    assert before <= now <= after and len(now) == len("2026-12-01 03:00:00")
