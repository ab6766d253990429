"""The ledger as an operator meets it (issue 13): connections, locks, versions, types, fingerprints.

Each test names the finding it covers (F5 ... F11 in issue 13's order). File descriptors are
counted with psutil (``Process().num_fds()``, Linux and macOS), which requirements.txt pins.
"""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import unicodedata
from contextlib import closing
from enum import IntEnum
from pathlib import Path

import psutil
import pytest

from helpers.ledger import (
    SCHEMA_VERSION,
    InvalidId,
    InvalidPayload,
    Ledger,
    LedgerBusy,
    LedgerError,
    SchemaVersionError,
    fingerprint,
)
from helpers.ledger import schema as ledger_schema

T = "tenant-a"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.db"
    with Ledger(path) as setup:
        setup.create_conversation(T, "conv-1")
    return path


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --------------------------------------------------------------------------- F5 connections
def test_f5_a_thousand_short_lived_threads_leave_the_fd_count_flat(db: Path) -> None:
    me = psutil.Process()

    def ledger_fds() -> int:
        # Only the ledger's own files (db, -wal, -shm): other tests in this worker process
        # (kernels, sockets) may open or close descriptors while this one counts.
        return sum(f.path.startswith(str(db)) for f in me.open_files())

    start = ledger_fds()

    def request(i: int) -> None:
        led.get_conversation(T, "conv-1")
        led.submit(T, f"cmd-{i}", "conv-1", {"i": i})

    with Ledger(db, synchronous="OFF") as led:
        counts = []
        for first in range(0, 1000, 20):  # 50 waves of 20 threads, each thread used once
            threads = [threading.Thread(target=request, args=(i,)) for i in range(first, first + 20)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
            counts.append(ledger_fds())
        assert len(led.list_commands(T, "conv-1")) == 1000
    closed = ledger_fds()
    # The leak added 2 fds per thread: +2,000 here. Now the count is bounded by the 20 threads
    # alive at a time: SQLite keeps the fd of a connection closed while others hold locks on
    # the file and reuses it later, so it settles within the first waves and stays there.
    print(f"ledger fds: {start} before, {counts[9]} after 200 threads, {counts[-1]} after 1,000, {closed} at the end")
    assert max(counts) < start + 3 * 20 + 10, counts
    assert max(counts[25:]) <= max(counts[:25]) + 6, counts
    assert closed <= start + 2


# --------------------------------------------------------------------------- F6 exact types
class LyingStr(str):
    def __len__(self) -> int:
        return 5


@pytest.mark.parametrize("field", ["tenant_id", "command_id", "conversation_id"])
def test_f6_a_str_subclass_is_not_an_id(db: Path, field: str) -> None:
    args = {"tenant_id": T, "command_id": "cmd-1", "conversation_id": "conv-1", field: LyingStr("x" * 5000)}
    with Ledger(db) as led:
        before = file_digest(db)
        with pytest.raises(InvalidId, match="must be a str, got LyingStr"):
            led.submit(args["tenant_id"], args["command_id"], args["conversation_id"], {})
    assert file_digest(db) == before


class Seat(IntEnum):
    WINDOW = 1


@pytest.mark.parametrize("value", [LyingStr("abc"), Seat.WINDOW, {"k": LyingStr("v")}, {LyingStr("k"): 1}])
def test_f6_payload_values_must_have_exact_json_types(db: Path, value: object) -> None:
    with Ledger(db) as led, pytest.raises(InvalidPayload):
        led.submit(T, "cmd-1", "conv-1", value)


# --------------------------------------------------------------------------- F7 schema version
OLD_SCHEMA = """
CREATE TABLE conversations (tenant_id TEXT NOT NULL, conversation_id TEXT NOT NULL,
    thread_id TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL, PRIMARY KEY (tenant_id, conversation_id));
CREATE TABLE commands (seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant_id TEXT NOT NULL, command_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL, thread_id TEXT NOT NULL, fingerprint TEXT NOT NULL, payload TEXT NOT NULL,
    status TEXT NOT NULL, run_id TEXT NOT NULL UNIQUE, result TEXT, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL, UNIQUE (tenant_id, command_id));
CREATE TABLE outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, command_seq INTEGER NOT NULL UNIQUE,
    status TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL);
"""


def test_f7_a_new_file_gets_the_schema_version(tmp_path: Path) -> None:
    with Ledger(tmp_path / "new.db"):
        pass
    with closing(sqlite3.connect(tmp_path / "new.db")) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    with Ledger(tmp_path / "new.db"):  # and opens again
        pass


def test_f7_an_unversioned_older_ledger_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(OLD_SCHEMA)
    before = file_digest(path)
    with pytest.raises(SchemaVersionError, match=f"no schema version.*needs version {SCHEMA_VERSION}"):
        Ledger(path)
    assert file_digest(path) == before


@pytest.mark.parametrize("version", [2, 99], ids=["older, with a separate outbox table", "newer"])
def test_f7_another_version_is_refused_with_both_numbers(tmp_path: Path, version: int) -> None:
    path = tmp_path / "other.db"
    with Ledger(path):
        pass
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(f"PRAGMA user_version = {version}")
    before = file_digest(path)
    with pytest.raises(SchemaVersionError, match=f"version {version}; this code needs version {SCHEMA_VERSION}"):
        Ledger(path)
    assert file_digest(path) == before


def test_f7_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my holiday notes, not a database\n" * 100)
    before = file_digest(path)
    with pytest.raises(LedgerError, match="not a ledger database"):
        Ledger(path)
    assert file_digest(path) == before


# --------------------------------------------------------------------------- F8 opening under a lock
def test_f8_open_waits_for_a_lock_including_the_wal_switch(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock of the new, empty file
    threading.Timer(0.3, lambda: holder.execute("ROLLBACK")).start()
    start = time.monotonic()
    try:
        with Ledger(path, timeout=5) as led:
            led.create_conversation(T, "conv-1")
    finally:
        time.sleep(0.05)
        holder.close()
    assert time.monotonic() - start >= 0.25  # it waited instead of failing at once


def test_f8_open_gives_up_with_ledger_busy_after_the_timeout(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as holder:
        holder.execute("BEGIN IMMEDIATE")
        start = time.monotonic()
        with pytest.raises(LedgerBusy, match="retrying is safe"):
            Ledger(path, timeout=0.3)
        assert time.monotonic() - start >= 0.25


OPENER = textwrap.dedent("""
    import sys, time
    from helpers.ledger import Ledger
    path, start, i = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    time.sleep(max(0.0, start - time.time()))
    with Ledger(path, timeout=10) as led:
        led.create_conversation("t", "c")
        led.submit("t", f"cmd-{i}", "c", {"i": i})
""")


def test_f8_eight_processes_open_a_new_file_at_once(tmp_path: Path) -> None:
    for round_ in range(2):
        path = tmp_path / f"race-{round_}.db"
        start = time.time() + 2.0  # every child has imported the ledger by then
        procs = [subprocess.Popen([sys.executable, "-c", OPENER, str(path), str(start), str(i)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(8)]
        results = [(p.wait(60), p.stderr.read()) for p in procs]
        for p in procs:
            p.stdout.close()
            p.stderr.close()
        assert [code for code, _ in results] == [0] * 8, [err for _, err in results if err][:1]
        with closing(sqlite3.connect(path)) as conn:
            assert conn.execute("SELECT COUNT(*) FROM commands").fetchone() == (8,)


class _SchemaAppearsAfterFirstRead:
    """A connection whose first statement is followed, at once, by another process creating
    the ledger's schema: the moment at which two separate reads would disagree."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn, self.path, self.reads = conn, path, 0

    def execute(self, sql: str, *args):
        cursor = self.conn.execute(sql, *args)
        self.reads += 1
        if self.reads == 1:
            Ledger(self.path).close()
        return cursor


def test_f8_the_version_check_reads_version_and_tables_in_one_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        racing = _SchemaAppearsAfterFirstRead(conn, path)
        assert ledger_schema.check_version(racing, str(path)) == 0  # a new file, not "tables but no version"
    with Ledger(path) as ledger:  # and the schema the other process made is the one this code uses
        ledger.create_conversation("t", "c")


# --------------------------------------------------------------------------- F9 busy
def test_f9_a_busy_database_raises_ledger_busy_and_a_retry_is_safe(db: Path) -> None:
    with Ledger(db, timeout=0.2) as led, closing(sqlite3.connect(db, isolation_level=None)) as holder:
        holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock for longer than our timeout
        start = time.monotonic()
        with pytest.raises(LedgerBusy, match="retrying the call is safe") as info:
            led.submit(T, "cmd-1", "conv-1", {"n": 1})
        assert isinstance(info.value, LedgerError) and isinstance(info.value.__cause__, sqlite3.OperationalError)
        assert time.monotonic() - start >= 0.15
        holder.execute("ROLLBACK")
        assert led.list_commands(T, "conv-1") == []  # the failed call changed nothing
        assert led.submit(T, "cmd-1", "conv-1", {"n": 1}).created
        assert not led.submit(T, "cmd-1", "conv-1", {"n": 1}).created


# --------------------------------------------------------------------------- F11 fingerprints
def test_f11_minus_zero_and_zero_are_one_payload() -> None:
    assert fingerprint(-0.0) == fingerprint(0.0)
    assert fingerprint({"price": [-0.0]}) == fingerprint({"price": [0.0]})
    assert fingerprint(1) != fingerprint(1.0)  # their JSON differs: decided to keep them apart
    assert fingerprint(True) != fingerprint(1)


def test_f11_the_stored_payload_is_what_the_client_sent(db: Path) -> None:
    nfd = unicodedata.normalize("NFD", "Café in Lisboa, São Bento")
    nfc = unicodedata.normalize("NFC", nfd)
    assert nfd != nfc
    with Ledger(db) as led:
        first = led.submit(T, "cmd-1", "conv-1", {"text": nfd, "price": -0.0})
        again = led.submit(T, "cmd-1", "conv-1", {"price": 0.0, "text": nfc})  # the same payload
        assert first.created and not again.created
        assert first.record.payload == {"text": nfd, "price": -0.0}
        assert str(first.record.payload["price"]) == "-0.0"
        [delivery] = led.dispatch_pending(lambda d: "ok")
        assert delivery.payload["text"] == nfd  # the model sees the text as typed
