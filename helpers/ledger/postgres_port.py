"""What a PostgreSQL port of chapter 11's command ledger must face, run on a real server.

:func:`postgres_port_facts` runs the experiments the chapter's porting section quotes, each
proved by a test of ``tests/helpers/test_ledger_postgres.py``: the queue cursor, the isolation
level of insert-first, and the queue's reads (:func:`_queue_race`, :func:`_sweep_race`).
They need psycopg and a server (chapter 12's throwaway one in the tests); the SQLite ledger
itself never imports this module.
"""

from __future__ import annotations

from typing import Any

__all__ = ["postgres_port_facts"]

# The queue statements of helpers.ledger.delivery as a PostgreSQL port without the cursor would write them
# (new commands found by ``ready IS NULL``), on the small table ``port_queue`` of :func:`_queue_race`.
_PORT_QUEUE_HEAD = (
    "UPDATE port_queue SET ready = 1 WHERE seq IN (SELECT MIN(seq) FROM port_queue AS new WHERE ready IS NULL"
    " GROUP BY thread_id HAVING NOT EXISTS (SELECT 1 FROM port_queue WHERE thread_id = new.thread_id"
    " AND status IN ('accepted', 'running') AND ready IS NOT NULL))")  # QUEUE_NEW_SQL[0]
_PORT_QUEUE_BEHIND = "UPDATE port_queue SET ready = 0 WHERE ready IS NULL"  # QUEUE_NEW_SQL[1]
_PORT_FINISH = ("UPDATE port_queue SET status = 'done', ready = 0 WHERE seq = 1 AND attempt = 1"
                " AND status IN ('accepted', 'running')")  # finish_command's UPDATE, for K1's attempt 1
_PORT_PROMOTE = ("UPDATE port_queue SET ready = 1 WHERE seq = (SELECT MIN(seq) FROM port_queue"
                 " WHERE thread_id = %s AND status IN ('accepted', 'running') AND ready IS NOT NULL)")  # PROMOTE_SQL
_PORT_LOCK = "SELECT thread_id FROM port_threads WHERE thread_id = %s FOR UPDATE"  # serialize on the thread


def _queue_race(url: str, mode: str) -> dict[str, Any]:
    """A queue sweep and the finish of a thread's head, interleaved; what the thread's queue holds after.

    Thread ``t`` holds ``K1`` (running, its head) and ``K2`` (accepted since, not queued yet:
    ``ready`` NULL). Connection ``queuer`` runs the sweep's first statement (``K2`` is not a
    head: ``K1`` is running); ``finisher`` then finishes ``K1`` and promotes the thread's next
    queued command (none yet) and commits; ``queuer`` then puts ``K2`` behind the head and
    commits. ``mode``:

    * ``"READ COMMITTED"``: both transactions as they are;
    * ``"SERIALIZABLE"``: both under SERIALIZABLE; a transaction that fails with SQLSTATE
      40001 is retried once, after the other committed;
    * ``"thread lock"``: READ COMMITTED, and each transaction first locks the thread's row
      (``SELECT ... FOR UPDATE``). The finisher asks with ``NOWAIT``, so instead of waiting
      for the queuer it fails at once with SQLSTATE 55P03, and runs again after the queuer
      committed (what a waiting ``FOR UPDATE`` would do).

    Returns ``failed`` (who failed with which SQLSTATE, in order) and ``rows``: (command,
    status, ready) after both committed.
    """
    import psycopg

    failed: list[str] = []
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("DROP TABLE IF EXISTS port_queue")
        admin.execute("DROP TABLE IF EXISTS port_threads")
        admin.execute("CREATE TABLE port_threads (thread_id TEXT PRIMARY KEY)")
        admin.execute("INSERT INTO port_threads VALUES ('t')")
        admin.execute("CREATE TABLE port_queue (seq BIGSERIAL PRIMARY KEY, command_id TEXT NOT NULL,"
                      " thread_id TEXT NOT NULL, status TEXT NOT NULL, ready INTEGER, attempt INTEGER NOT NULL)")
        admin.execute("INSERT INTO port_queue (command_id, thread_id, status, ready, attempt)"
                      " VALUES ('K1', 't', 'running', 1, 1), ('K2', 't', 'accepted', NULL, 0)")
        level = "SERIALIZABLE" if mode == "SERIALIZABLE" else "READ COMMITTED"
        locked = mode == "thread lock"

        def begin(conn: Any, *, nowait: bool = False) -> None:
            conn.execute(f"SET TRANSACTION ISOLATION LEVEL {level}")  # one of two constants
            if locked:
                conn.execute(_PORT_LOCK + (" NOWAIT" if nowait else ""), ("t",))

        def finish(conn: Any) -> None:
            conn.execute(_PORT_FINISH)
            conn.execute(_PORT_PROMOTE, ("t",))
            conn.commit()

        def sweep(conn: Any) -> None:
            conn.execute(_PORT_QUEUE_HEAD)
            conn.execute(_PORT_QUEUE_BEHIND)
            conn.commit()

        with psycopg.connect(url) as queuer, psycopg.connect(url) as finisher:
            begin(queuer)
            queuer.execute(_PORT_QUEUE_HEAD)
            finisher_done = False
            try:
                begin(finisher, nowait=True)
                finish(finisher)
                finisher_done = True
            except (psycopg.errors.SerializationFailure, psycopg.errors.LockNotAvailable) as exc:
                failed.append(f"finisher: SQLSTATE {exc.sqlstate}")
                finisher.rollback()
            try:
                queuer.execute(_PORT_QUEUE_BEHIND)
                queuer.commit()
            except psycopg.errors.SerializationFailure as exc:
                failed.append(f"queuer: SQLSTATE {exc.sqlstate}")
                queuer.rollback()
                begin(queuer)
                sweep(queuer)  # the retry, after the finisher committed
            if not finisher_done:
                begin(finisher)
                finish(finisher)  # the retry, after the queuer committed
        rows = [tuple(r) for r in admin.execute("SELECT command_id, status, ready FROM port_queue ORDER BY seq")]
        admin.execute("DROP TABLE port_queue")
        admin.execute("DROP TABLE port_threads")
    return {"failed": failed, "rows": rows}


def _sweep_race(url: str, mode: str) -> list[tuple]:
    """A queue sweep by state (``ready IS NULL``) while a client accepts a command; the queue after.

    Thread ``t`` holds ``K1`` (new). The sweep locks the threads of the new commands it finds
    (``t``) and runs the head statement; a client then commits ``K3`` on thread ``u``; the
    sweep runs the behind statement and commits. ``mode``:

    * ``"statements"``: READ COMMITTED, the two statements as they are: the behind statement
      sees ``K3`` and puts it behind a head that thread ``u`` does not have (``ready`` 0);
    * ``"REPEATABLE READ"``: the same statements in one snapshot: ``K3`` stays new (NULL);
    * ``"selected seqs"``: READ COMMITTED, but the sweep first selects the new commands
      (``... FOR UPDATE``) and updates only those ``seq``s: ``K3`` stays new (NULL).

    Returns (command, thread, ready) in ``seq`` order.
    """
    import psycopg

    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("DROP TABLE IF EXISTS port_queue")
        admin.execute("DROP TABLE IF EXISTS port_threads")
        admin.execute("CREATE TABLE port_threads (thread_id TEXT PRIMARY KEY)")
        admin.execute("INSERT INTO port_threads VALUES ('t'), ('u')")
        admin.execute("CREATE TABLE port_queue (seq BIGSERIAL PRIMARY KEY, command_id TEXT NOT NULL,"
                      " thread_id TEXT NOT NULL, status TEXT NOT NULL, ready INTEGER, attempt INTEGER NOT NULL)")
        admin.execute("INSERT INTO port_queue (command_id, thread_id, status, ready, attempt)"
                      " VALUES ('K1', 't', 'accepted', NULL, 0)")
        with psycopg.connect(url) as sweeper, psycopg.connect(url, autocommit=True) as client:
            level = "REPEATABLE READ" if mode == "REPEATABLE READ" else "READ COMMITTED"
            sweeper.execute(f"SET TRANSACTION ISOLATION LEVEL {level}")  # one of two constants
            selected = [tuple(r) for r in sweeper.execute(
                "SELECT seq, thread_id FROM port_queue WHERE ready IS NULL ORDER BY seq"
                + (" FOR UPDATE" if mode == "selected seqs" else ""))]
            for thread in sorted({thread for _, thread in selected}):
                sweeper.execute(_PORT_LOCK, (thread,))
            seqs = [seq for seq, _ in selected]
            only = " AND seq = ANY(%s)" if mode == "selected seqs" else ""
            params = (seqs,) if only else ()
            sweeper.execute(_PORT_QUEUE_HEAD.replace("WHERE ready IS NULL", "WHERE ready IS NULL" + only, 1), params)
            client.execute("INSERT INTO port_queue (command_id, thread_id, status, ready, attempt)"
                           " VALUES ('K3', 'u', 'accepted', NULL, 0)")  # a submit commits now
            sweeper.execute(_PORT_QUEUE_BEHIND + only, params)
            sweeper.commit()
        rows = [tuple(r) for r in admin.execute("SELECT command_id, thread_id, ready FROM port_queue ORDER BY seq")]
        admin.execute("DROP TABLE port_queue")
        admin.execute("DROP TABLE port_threads")
    return rows


def postgres_port_facts(url: str) -> dict[str, Any]:
    """The three facts a PostgreSQL port of the ledger must face, run on the server at ``url``.

    1. **The cursor.** Connection ``slow`` inserts ``K1`` (it takes ``seq`` 1) and does not
       commit yet; ``fast`` inserts ``K2`` (``seq`` 2) and commits; a claim reads
       ``MAX(seq)`` (2) as its cursor; then ``slow`` commits. ``below_cursor`` lists the
       commands committed after the claim with a ``seq`` below its cursor: what
       ``seq > queued_through`` would skip for ever.
    2. **The isolation level.** A loser's transaction runs its first query (``SELECT 1``),
       a winner inserts the key and commits, then the loser runs the same
       ``INSERT ... ON CONFLICT DO NOTHING``. Under READ COMMITTED it gets ``rowcount`` 0;
       under REPEATABLE READ a serialization failure (``insert_first``: the rowcount, or the
       error's SQLSTATE). ``snapshot_at_first_query``: the same under REPEATABLE READ with
       only ``SET TRANSACTION`` run before the winner: the snapshot is taken at the first
       query, not at ``BEGIN``, so that loser sees the winner's row (``rowcount`` 0).
    3. **The queue's reads.** ``queue_race``: :func:`_queue_race` in each of its modes (a
       queue sweep and the finish of the thread's head, interleaved); ``sweep_race``:
       :func:`_sweep_race` in each of its modes (a sweep by state while a client accepts).

    Each step runs in this order on its own connection, so the outcome is deterministic.
    Creates (and drops) the tables ``port_commands``, ``port_queue`` and ``port_threads``.
    Chapter 11 states these results; ``tests/helpers/test_ledger_postgres.py`` runs this on
    chapter 12's throwaway server.
    """
    import psycopg

    insert = "INSERT INTO port_commands (tenant_id, command_id) VALUES ('acme', %s) ON CONFLICT DO NOTHING"
    facts: dict[str, Any] = {"insert_first": {}}
    with psycopg.connect(url, autocommit=True) as claimer:
        claimer.execute("DROP TABLE IF EXISTS port_commands")
        claimer.execute("CREATE TABLE port_commands (seq BIGSERIAL PRIMARY KEY, tenant_id TEXT NOT NULL,"
                        " command_id TEXT NOT NULL, UNIQUE (tenant_id, command_id))")
        with psycopg.connect(url) as slow, psycopg.connect(url, autocommit=True) as fast:
            slow.execute(insert, ("K1",))  # takes seq 1, not committed yet
            fast.execute(insert, ("K2",))  # takes seq 2, commits
            (cursor,) = claimer.execute("SELECT MAX(seq) FROM port_commands").fetchone()
            slow.commit()
        facts["claim_cursor"] = cursor
        facts["below_cursor"] = [k for (k,) in claimer.execute(
            "SELECT command_id FROM port_commands WHERE seq < %s ORDER BY seq", (cursor,))]
        for level, first_query in (("READ COMMITTED", True), ("REPEATABLE READ", True), ("REPEATABLE READ", False)):
            key = f"K-{level}-{first_query}"
            with psycopg.connect(url) as loser, psycopg.connect(url, autocommit=True) as winner:
                loser.execute(f"SET TRANSACTION ISOLATION LEVEL {level}")  # one of two constants
                if first_query:
                    loser.execute("SELECT 1").fetchall()  # the loser's first query: under RR, its snapshot
                winner.execute(insert, (key,))
                try:
                    outcome: Any = loser.execute(insert, (key,)).rowcount
                except psycopg.errors.SerializationFailure as exc:
                    outcome = f"SQLSTATE {exc.sqlstate}"
                    loser.rollback()
            if first_query:
                facts["insert_first"][level] = outcome
            else:
                facts["snapshot_at_first_query"] = outcome
        facts["rows"] = claimer.execute("SELECT COUNT(*) FROM port_commands").fetchone()[0]
        claimer.execute("DROP TABLE port_commands")
    facts["queue_race"] = {mode: _queue_race(url, mode) for mode in ("READ COMMITTED", "SERIALIZABLE", "thread lock")}
    facts["sweep_race"] = {mode: _sweep_race(url, mode) for mode in ("statements", "REPEATABLE READ", "selected seqs")}
    return facts
