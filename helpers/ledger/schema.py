"""The command ledger's tables (chapter 11 shows :data:`SCHEMA` in a cell and saves it here).

* ``conversations``: ``(tenant_id, conversation_id)`` -> a ``thread_id`` minted here.
* ``commands``: one row per accepted command, ``UNIQUE (tenant_id, command_id)``. The row is
  also its own outbox entry: ``ready``/``attempt``/``lease_owner``/``lease_expires`` are its
  delivery state. Two partial indexes serve the dispatchers: ``commands_queue`` (each
  thread's queued commands in ``seq`` order) and ``commands_claim`` (only the heads, so a
  claim costs the same with 2,000 or 20,000 commands queued behind a running one).
* ``runs``: one row per delivery attempt, pointing at the checkpoints it started from and
  left behind (the ledger points into the checkpointer's history, it does not copy it).
* ``queue_cursor``: the highest ``seq`` the dispatchers have queued.

Accepting a command writes the row and its ``UNIQUE`` key and nothing else: usually two
pages in the WAL, as a bare keyed insert does (more when a page splits). A new command is
in neither partial index (``ready`` is NULL) until the next claim queues it, so ordering is
off the request's path.

The schema version lives in ``PRAGMA user_version`` (:data:`SCHEMA_VERSION`);
:func:`open_file` creates the schema in a new file, refuses another version (or an
unversioned file with tables) with ``SchemaVersionError`` without touching the file, and
switches the file to WAL.
"""

from __future__ import annotations

import sqlite3

from helpers.ledger.connections import Transactions
from helpers.ledger.records import LedgerError, SchemaVersionError

__all__ = ["COMMAND_COLUMNS", "MIN_SQLITE", "SCHEMA", "SCHEMA_VERSION", "open_file", "require_sqlite"]

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
    ready           INTEGER,                     -- NULL: not queued yet, 1: the head, 0: behind it or ended
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
    start_checkpoint_id TEXT,                    -- the checkpoint the run started from (its first one's parent)
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


def require_sqlite() -> None:
    """``LedgerError`` if this Python's SQLite is older than :data:`MIN_SQLITE`."""
    if sqlite3.sqlite_version_info < MIN_SQLITE:
        raise LedgerError(f"the ledger needs SQLite {'.'.join(map(str, MIN_SQLITE))} or newer (for INSERT ... "
                          f"ON CONFLICT DO NOTHING); this Python uses SQLite {sqlite3.sqlite_version}: "
                          "use a newer Python build")


def check_version(conn: sqlite3.Connection, path: str) -> int:
    """The file's schema version; ``SchemaVersionError`` if this code cannot use it."""
    # One statement, so one snapshot: read apart, another process could create the
    # schema between the two reads, and a brand-new ledger would look like a foreign file.
    version, tables = conn.execute(
        "SELECT (SELECT user_version FROM pragma_user_version), (SELECT COUNT(*) FROM sqlite_master)").fetchone()
    if version == 0 and tables:
        raise SchemaVersionError(
            f"{path} has tables but no schema version: a ledger from before schema versions, or "
            f"another database; this code needs version {SCHEMA_VERSION}: use a new file")
    if version not in (0, SCHEMA_VERSION):
        raise SchemaVersionError(f"{path} holds ledger schema version {version}; this code needs "
                                 f"version {SCHEMA_VERSION}")
    return version


def _create_or_check(conn: sqlite3.Connection, path: str) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        if check_version(conn, path) == 0:  # checked again: another process may have just created it
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")  # an int constant
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def open_file(tx: Transactions, deadline: float) -> None:
    """Check the version (read-only first), switch to WAL, create the schema if the file is new.

    Every step waits for locks until ``deadline`` (``PRAGMA journal_mode=WAL`` does not call
    SQLite's busy handler), so many processes can open a new file at once.
    """
    pool = tx.pool
    conn = pool.until(deadline, pool.get)
    try:
        pool.until(deadline, lambda: check_version(conn, tx.path))  # read-only: refuse before writing
        pool.until(deadline, lambda: conn.execute("PRAGMA journal_mode=WAL").fetchone())
        pool.until(deadline, lambda: _create_or_check(conn, tx.path))
    except BaseException:
        pool.discard(conn)
        raise
    pool.put(conn)
