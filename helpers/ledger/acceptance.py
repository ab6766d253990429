"""The acceptance half of the command ledger: conversations, ``submit`` and the reads.

Chapter 11 shows :func:`submit_command` (insert first) and :func:`check_retry` (same key,
same request, or ``PayloadMismatch``) in cells and saves them here; :class:`Acceptance`
wraps them with validation, fingerprints and connections. Import it all through
:mod:`helpers.ledger`.

What the chapter leaves out:

* **One statement, and what it writes.** ``submit_command`` is one ``INSERT ... SELECT ...
  ON CONFLICT DO NOTHING``: it finds the caller's conversation on its thread and inserts,
  or does nothing if the key exists; ``rowcount`` says which and ``lastrowid`` is the new
  ``seq``, so nothing is read back. On an autocommit connection that statement is its own
  transaction. Its commit usually writes two pages to the WAL (the row and its key, as a
  bare keyed insert does; more when a page splits): the next claim queues the command, off
  the request's path. Only a call that inserted nothing reads the stored row.
* **The kept thread.** An :class:`Acceptance` reads a conversation's thread once
  (``create_conversation``, ``get_conversation`` or the first ``submit`` there) and keeps
  it (at most :data:`MAX_KEPT_THREADS` conversations). A conversation changed since
  (another thread, or gone) matches no insert and is read again, at most
  :data:`MAX_THREAD_READS` times, then a ``LedgerError`` says that nothing was accepted and
  retrying is safe.
* **Time.** ``created_at`` is when the call began (UTC, to the second, as SQLite's
  ``datetime('now')`` writes it) and ``seq`` the order of acceptance, so under contention a
  later ``seq`` can carry an earlier ``created_at``.
* **Insert first on PostgreSQL.** Under READ COMMITTED (PostgreSQL's default) the same
  ``INSERT ... ON CONFLICT DO NOTHING`` gives the losers of a race a clean ``rowcount`` 0.
  Under REPEATABLE READ or SERIALIZABLE it still makes one row, but the losers can get a
  serialization failure (SQLSTATE 40001) that they must retry (chapter 11 runs it): a port
  either accepts under READ COMMITTED or retries on 40001.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from typing import Any

from helpers import ledger
from helpers.ledger.connections import CrashAtCommit, Transactions
from helpers.ledger.ids import payload_json, run_id_for, validate_id
from helpers.ledger.records import (
    CommandNotFound,
    CommandRecord,
    Conversation,
    ConversationNotFound,
    LedgerError,
    RunRecord,
    SubmitResult,
)
from helpers.ledger.schema import COMMAND_COLUMNS

__all__ = ["MAX_KEPT_THREADS", "MAX_THREAD_READS", "Acceptance", "check_retry", "submit_command", "utc_now"]

MAX_KEPT_THREADS = 10_000  # conversations whose thread an Acceptance keeps; more, and it starts again
MAX_THREAD_READS = 3  # fresh reads of a conversation's thread that one submit may need


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


# shown in solutions/11_command_ledger.ipynb
def check_retry(stored: tuple, conversation_id: str, fingerprint: str) -> None:
    """A key that was already accepted must come back with the same request, or PayloadMismatch.

    ``stored`` is the command row ``submit_command`` returned with ``created=False``.
    """
    tenant_id, command_id, stored_conversation, stored_fingerprint = stored[1], stored[2], stored[3], stored[6]
    if stored_conversation != conversation_id:
        raise ledger.PayloadMismatch(tenant_id, command_id, f"conversation {stored_conversation!r}")
    if stored_fingerprint != fingerprint:
        raise ledger.PayloadMismatch(tenant_id, command_id, f"a different payload (stored "
                                                            f"{stored_fingerprint[:12]}, got {fingerprint[:12]})")


_this_second = (-1, "")  # (a second, its text): one tuple, so threads swap it whole


def utc_now() -> str:
    """Now in UTC, as SQLite's ``datetime('now')`` writes it (formatted once per second)."""
    global _this_second
    second = int(time.time())
    if second != _this_second[0]:
        _this_second = (second, time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(second)))
    return _this_second[1]


class Acceptance:
    """Conversations, ``submit`` and the reads, on the transactions ``tx`` shares with delivery."""

    def __init__(self, tx: Transactions) -> None:
        self.tx = tx
        self._threads: dict[tuple[str, str], str] = {}  # (tenant, conversation) -> its thread, as last read

    # ----------------------------------------------------------------- conversations
    def create_conversation(self, tenant_id: str, conversation_id: str) -> Conversation:
        """Create (or return the existing) conversation and its server-minted thread_id."""
        validate_id("tenant_id", tenant_id)
        validate_id("conversation_id", conversation_id)
        with self.tx.write() as conn:
            conn.execute(
                "INSERT INTO conversations (tenant_id, conversation_id, thread_id, created_at) "
                "VALUES (?, ?, ?, datetime('now')) ON CONFLICT (tenant_id, conversation_id) DO NOTHING",
                (tenant_id, conversation_id, str(uuid.uuid4())))
            return self._keep(self._conversation(conn, tenant_id, conversation_id))

    def get_conversation(self, tenant_id: str, conversation_id: str) -> Conversation:
        """The caller's conversation, or ``ConversationNotFound``."""
        validate_id("tenant_id", tenant_id)
        validate_id("conversation_id", conversation_id)
        with self.tx.read() as conn:
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
        crash_before_commit = self.tx.crash_at == "before_commit"
        for _ in range(MAX_THREAD_READS + 1):
            with self.tx.read() as conn:
                target: Any = CrashAtCommit(conn) if crash_before_commit else conn
                row, created = submit_command(target, tenant_id, command_id, conversation_id, thread_id, body, digest,
                                              run_id, utc_now())
            if row is not None:
                break
            self._threads.pop(known, None)
            thread_id = self._thread_of(tenant_id, conversation_id)
        else:
            raise LedgerError(f"conversation {conversation_id!r} of tenant {tenant_id!r} changed its thread "
                              f"{MAX_THREAD_READS} times during this call; nothing was accepted, retrying is safe")
        if not created:  # a created row holds exactly what this call sent
            check_retry(row, conversation_id, digest)
        record = CommandRecord.from_row(row)
        if self.tx.crash_at is not None:
            self.tx.crash("after_commit")
        return SubmitResult(record=record, created=created)

    def get_command(self, tenant_id: str, command_id: str) -> CommandRecord:
        """The stored command, or ``CommandNotFound``."""
        validate_id("tenant_id", tenant_id)
        validate_id("command_id", command_id)
        with self.tx.read() as conn:
            row = conn.execute(f"SELECT {COMMAND_COLUMNS} FROM commands WHERE tenant_id = ? AND command_id = ?",
                               (tenant_id, command_id)).fetchone()
        if row is None:
            raise CommandNotFound(f"no command {command_id!r} for tenant {tenant_id!r}")
        return CommandRecord.from_row(row)

    def list_commands(self, tenant_id: str, conversation_id: str) -> list[CommandRecord]:
        """All commands of the caller's conversation, oldest first."""
        conv = self.get_conversation(tenant_id, conversation_id)
        with self.tx.read() as conn:
            rows = conn.execute(f"SELECT {COMMAND_COLUMNS} FROM commands WHERE tenant_id = ? AND thread_id = ? "
                                "ORDER BY seq", (tenant_id, conv.thread_id)).fetchall()
        return [CommandRecord.from_row(row) for row in rows]

    def list_runs(self, tenant_id: str, conversation_id: str) -> list[RunRecord]:
        """Every delivery attempt of the conversation's commands, in command then attempt order."""
        conv = self.get_conversation(tenant_id, conversation_id)
        with self.tx.read() as conn:
            rows = conn.execute(
                "SELECT r.run_id, r.attempt, c.command_id, r.dispatcher, r.start_checkpoint_id, "
                "r.end_checkpoint_id, r.outcome FROM runs AS r JOIN commands AS c ON c.seq = r.command_seq "
                "WHERE c.tenant_id = ? AND c.thread_id = ? ORDER BY c.seq, r.attempt",
                (tenant_id, conv.thread_id)).fetchall()
        return [RunRecord(*row) for row in rows]
