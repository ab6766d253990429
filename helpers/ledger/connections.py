"""Connections and transactions of the command ledger (:mod:`helpers.ledger`). Plumbing: chapter 11
shows the SQL that runs inside these transactions, not this module.

* :class:`Transactions` is the one object both halves of the ledger (acceptance and
  delivery) share: ``read()`` lends a connection in autocommit mode, ``write()`` wraps a
  block in ``BEGIN IMMEDIATE`` ... ``COMMIT`` (rolled back on any exception), and
  ``crash(point)`` raises a :class:`~helpers.ledger.records.SimulatedCrash` at an injected
  crash point. Its public attributes are all a half needs; neither half touches the other.
* :class:`ConnectionPool` lends a connection to one thread at a time and keeps at most
  ``max_idle`` of them open between uses, so a thread that ends leaves no connection (and
  no file descriptor) behind. ``using()`` turns "database is locked" after the busy
  timeout into :class:`~helpers.ledger.records.LedgerBusy`; ``until()`` retries a step that
  SQLite's busy handler does not cover (``PRAGMA journal_mode=WAL``) until a deadline.
* :class:`CrashAtCommit` makes the statement that would commit a write a simulated crash.

Every connection gets ``PRAGMA synchronous`` (FULL by default: in WAL mode each commit
syncs the log before it returns, so an acknowledged command survives a power cut;
NORMAL syncs only at checkpoints, so the last commits before a power cut or an OS crash
can be rolled back, while a killed *process* loses nothing) and ``PRAGMA foreign_keys =
ON``. WAL needs shared memory between the processes that open the file, so they must all
run on one host (no network filesystem).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from helpers.ledger.records import LedgerBusy, LedgerError, SimulatedCrash

__all__ = ["SYNCHRONOUS_LEVELS", "ConnectionPool", "CrashAtCommit", "Transactions", "is_busy"]

SYNCHRONOUS_LEVELS = ("OFF", "NORMAL", "FULL", "EXTRA")

T = TypeVar("T")


def is_busy(exc: sqlite3.OperationalError) -> bool:
    """Is ``exc`` SQLite saying that another connection holds a lock?"""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in str(exc) or "busy" in str(exc)


class ConnectionPool:
    """Connections to one SQLite file with the ledger's settings, lent one thread at a time."""

    def __init__(self, path: str, *, timeout: float, synchronous: str, max_idle: int) -> None:
        if synchronous not in SYNCHRONOUS_LEVELS:
            raise ValueError(f"bad synchronous level {synchronous!r}")
        self.path, self.timeout, self.synchronous, self.max_idle = path, timeout, synchronous, max_idle
        self._lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._open: set[sqlite3.Connection] = set()
        self._closed = False

    def get(self) -> sqlite3.Connection:
        with self._lock:
            if self._closed:
                raise LedgerError("ledger is closed")
            if self._idle:
                return self._idle.pop()
        # timeout= is SQLite's busy timeout; isolation_level=None: the ledger issues BEGIN and
        # COMMIT itself; check_same_thread=False: a lent connection serves one thread at a time.
        conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")  # checked against a fixed list
            conn.execute("PRAGMA foreign_keys = ON")
        except BaseException:
            conn.close()
            raise
        with self._lock:
            self._open.add(conn)
        return conn

    def put(self, conn: sqlite3.Connection) -> None:
        if conn.in_transaction:  # never lend a connection in the middle of a transaction
            conn.execute("ROLLBACK")
        with self._lock:
            if not self._closed and len(self._idle) < self.max_idle:
                self._idle.append(conn)
                return
        self.discard(conn)

    def discard(self, conn: sqlite3.Connection) -> None:
        with self._lock:
            self._open.discard(conn)
        conn.close()

    def close(self) -> None:
        """Close the idle connections now; connections in use close when they come back."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            self.discard(conn)

    def busy(self) -> LedgerBusy:
        return LedgerBusy(f"{self.path} stayed locked for {self.timeout} s; nothing was changed, "
                          "so retrying the call is safe")

    def using(self) -> _Lending:
        """Lend a connection; a lock that outlasts the busy timeout becomes ``LedgerBusy``."""
        return _Lending(self)

    def until(self, deadline: float, step: Callable[[], T]) -> T:
        """Run ``step``, retrying while the file is locked, until ``deadline``.

        ``PRAGMA journal_mode=WAL`` does not call SQLite's busy handler, so without this
        loop it fails at once while another process holds a lock. A file that is not a
        SQLite database raises ``LedgerError``.
        """
        pause = 0.001
        while True:
            try:
                return step()
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise
                if time.monotonic() >= deadline:
                    raise LedgerBusy(f"{self.path} stayed locked for {self.timeout} s while opening; "
                                     "retrying is safe") from exc
            except sqlite3.DatabaseError as exc:
                raise LedgerError(f"{self.path} is not a ledger database: {exc}") from exc
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, 0.05)


class _Lending:
    """``with pool.using() as conn``: a class, not a generator, as every ledger call enters one."""

    __slots__ = ("pool", "conn")

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def __enter__(self) -> sqlite3.Connection:
        try:
            self.conn = self.pool.get()
        except sqlite3.OperationalError as exc:
            if is_busy(exc):
                raise self.pool.busy() from exc
            raise
        return self.conn

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        self.pool.put(self.conn)
        if isinstance(exc, sqlite3.OperationalError) and is_busy(exc):
            raise self.pool.busy() from exc


class CrashAtCommit:
    """A connection that dies before its write commits (for ``crash_at="before_commit"``).

    ``submit_command`` writes with one ``INSERT`` in autocommit mode, so the ``INSERT`` is
    the commit: it raises :class:`SimulatedCrash` instead of running, and nothing of the
    write reaches the file.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql.startswith("INSERT"):
            raise SimulatedCrash("before_commit")
        return self._conn.execute(sql, *args)

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction


class Transactions:
    """The connections and transactions of one ledger file, shared by acceptance and delivery.

    ``crash_at`` names the one injected crash point that is armed (or None); ``on_crash``
    runs after a :class:`SimulatedCrash` has rolled a write back (the ledger uses it to end
    its own leases, as if they had run out).
    """

    def __init__(self, path: str, *, timeout: float, synchronous: str, max_idle: int,
                 crash_at: str | None = None) -> None:
        self.path, self.timeout, self.crash_at = path, timeout, crash_at
        self.pool = ConnectionPool(path, timeout=timeout, synchronous=synchronous, max_idle=max_idle)
        self.on_crash: Callable[[], None] | None = None

    def read(self) -> _Lending:
        """``with tx.read() as conn``: a connection in autocommit mode (each statement commits)."""
        return self.pool.using()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """``with tx.write() as conn``: one write transaction, committed when the block ends.

        ``BEGIN IMMEDIATE`` takes the write lock up front, so two writers never both read a
        snapshot and then fail to upgrade it (SQLITE_BUSY in the middle of a transaction).
        """
        with self.pool.using() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, SimulatedCrash) and self.on_crash is not None:
                    self.on_crash()
                raise

    def crash(self, point: str, *, in_transaction: bool = False) -> None:
        """Raise ``SimulatedCrash(point)`` if ``point`` is the armed crash point."""
        if self.crash_at == point:
            if not in_transaction and self.on_crash is not None:  # inside one, write() calls it
                self.on_crash()
            raise SimulatedCrash(point)

    def close(self) -> None:
        self.pool.close()
