"""Experiments around the command ledger for chapter 11: races, crashes, leases, processes.

Plumbing, not the lesson: the graph and the ledger calls they exercise are shown in the
chapter; these functions start threads and processes, inject crashes and count outcomes.

* :func:`run_together`: call a function in N threads released by one barrier.
* :func:`check_then_insert_race`: 16 threads run check-then-insert on one key in three
  transaction styles (``immediate``, ``autocommit``, ``snapshot``) and report what happens.
* :func:`table_counts`, :func:`status_counts`: row counts of a ledger file;
  :func:`unique_keys`: the primary and UNIQUE keys of each table;
  :func:`run_rows`: the ``runs`` table of a conversation with checkpoint labels (C0, C1, ...).
* :func:`crash_then_restart` / :func:`crash_table`: one injected crash point, a restart, a
  dispatcher sweep and the client's retry; the counts that matter.
* :func:`run_dispatchers`: real dispatcher processes (what ``python -m helpers.ledger.service
  dispatch`` runs), forked from a :class:`helpers.preloaded_processes.ProcessServer` that
  has imported :data:`CHILD_PRELOAD` (and so LangGraph) once.
* :func:`slow_run`: a run that outlives its lease, with and without renewal, on a
  :class:`helpers.ledger.ManualClock` (no waiting).
* The PostgreSQL port's facts (the cursor, the isolation level, the queue's reads) are in
  :mod:`helpers.ledger.postgres_port`.
* :data:`ACCEPT_SCHEMA` / :func:`open_commands_table`: the minimal ``commands`` table of
  exercise 11.1; :data:`JOBS_SCHEMA` / :func:`open_jobs_table`: the small ``jobs`` table that
  exercises 11.2 to 11.4 work on (a command's delivery columns, without the rest). Both on
  autocommit connections (each statement commits on its own).
"""

from __future__ import annotations

import sqlite3
import tempfile
import threading
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from helpers import checkpoints, ledger, preloaded_processes
from helpers.ledger import service as ledger_service
from helpers.ledger.service import ChatService

__all__ = ["ACCEPT_SCHEMA", "CHILD_PRELOAD", "JOBS_SCHEMA", "check_then_insert_race", "crash_table",
           "crash_then_restart", "open_commands_table", "open_jobs_table", "run_dispatchers",
           "run_rows",
           "run_together", "slow_run", "status_counts", "table_counts", "unique_keys"]

WINDOW = {"kind": "message", "message_id": "m-1", "text": "I prefer a window seat"}


def run_together(n: int, func: Callable[[], Any], *, timeout: float = 30.0) -> list[Any]:
    """Call ``func`` in ``n`` threads released at the same moment by a barrier.

    Returns the results in thread order; an exception a call raised is returned in its place.
    """
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n

    def worker(i: int) -> None:
        try:
            barrier.wait(timeout)
            results[i] = func()
        except Exception as exc:  # returned, so the caller can count outcomes
            results[i] = exc

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    return results


def check_then_insert_race(path: str | Path, style: str, n: int = 16) -> dict[str, int]:
    """``n`` threads, each with its own connection, check for one key and insert it if absent.

    ``style``: ``"immediate"`` (inside ``BEGIN IMMEDIATE``), ``"autocommit"`` (no transaction;
    a barrier holds everyone between the check and the insert) or ``"snapshot"`` (inside a
    deferred transaction, a read snapshot like PostgreSQL's REPEATABLE READ; the same
    barrier). Returns counts: created, saw_existing, integrity_errors, locked_errors, rows.
    """
    if style not in ("immediate", "autocommit", "snapshot"):
        raise ValueError(f"unknown style {style!r}")
    with closing(sqlite3.connect(path, isolation_level=None)) as setup:
        setup.execute("PRAGMA journal_mode=WAL")
        setup.execute("CREATE TABLE IF NOT EXISTS keys (k TEXT PRIMARY KEY)")
        setup.execute("DELETE FROM keys")
    between = threading.Barrier(n, timeout=10)

    def attempt() -> str:
        with closing(sqlite3.connect(path, timeout=10, isolation_level=None)) as conn:
            try:
                if style != "autocommit":
                    conn.execute("BEGIN IMMEDIATE" if style == "immediate" else "BEGIN")
                seen = conn.execute("SELECT 1 FROM keys WHERE k = 'K'").fetchone()
                if style != "immediate":
                    between.wait()  # everyone has checked before anyone inserts
                if seen:
                    outcome = "saw_existing"
                else:
                    conn.execute("INSERT INTO keys VALUES ('K')")
                    outcome = "created"
                if conn.in_transaction:
                    conn.execute("COMMIT")
                return outcome
            except sqlite3.IntegrityError:
                return "integrity_errors"
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc):
                    return "locked_errors"
                raise
            finally:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")

    outcomes = Counter(run_together(n, attempt))
    with closing(sqlite3.connect(path)) as conn:
        rows = conn.execute("SELECT COUNT(*) FROM keys").fetchone()[0]
    counts = {k: outcomes.get(k, 0) for k in ("created", "saw_existing", "integrity_errors", "locked_errors")}
    return {**counts, "rows": rows}


def table_counts(path: str | Path, tables: tuple[str, ...] = ("conversations", "commands", "runs")) -> dict[str, int]:
    """Row count per table of a SQLite file, read on a fresh connection."""
    with closing(sqlite3.connect(path)) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        # Table names come from the fixed tuple above and are checked against the schema.
        return {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables if t in names}


def status_counts(path: str | Path) -> dict[str, Any]:
    """Commands per status, and how many are pending delivery (accepted or running), of a ledger file."""
    with closing(sqlite3.connect(path)) as conn:
        statuses = dict(conn.execute("SELECT status, COUNT(*) FROM commands GROUP BY status ORDER BY status"))
    return {"commands": statuses, "pending": statuses.get("accepted", 0) + statuses.get("running", 0)}


def unique_keys(conn: sqlite3.Connection) -> list[dict[str, str]]:
    """One row per table: its primary key and its UNIQUE constraints, as column lists."""
    rows = []
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                         "AND name NOT LIKE 'sqlite_%' ORDER BY rowid")]
    for table in tables:  # names come from sqlite_master and are quoted
        info = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
        primary = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]]
        unique = []
        for index in conn.execute(f'PRAGMA index_list("{table}")').fetchall():
            if index[2] and index[3] == "u":  # a UNIQUE constraint (not the primary key, not a plain index)
                unique.append("(" + ", ".join(r[2] for r in conn.execute(f'PRAGMA index_info("{index[1]}")')) + ")")
        rows.append({"table": table, "primary key": "(" + ", ".join(primary) + ")", "unique": " ".join(unique) or "-"})
    return rows


def run_rows(service: ChatService, tenant_id: str, conversation_id: str,
             names: dict[str, str]) -> list[dict[str, Any]]:
    """The conversation's ``runs`` rows: command label, attempt, outcome, first and last checkpoint.

    Checkpoints get the labels :func:`helpers.checkpoints.print_history` prints (C0, C1, ...).
    """
    config = service.thread_config(tenant_id, conversation_id)
    labels = checkpoints.label_ids(s.config["configurable"]["checkpoint_id"]
                                   for s in service.graph.get_state_history(config))
    return [{"command": names.get(r.command_id, r.command_id), "attempt": r.attempt, "outcome": r.outcome or "-",
             "start": labels.get(r.start_checkpoint_id, "-"), "end": labels.get(r.end_checkpoint_id, "-")}
            for r in service.ledger.list_runs(tenant_id, conversation_id)]


def _answer_is_head(service: ChatService, tenant_id: str, conversation_id: str, answer: str | None) -> bool:
    head = service.graph.get_state(service.thread_config(tenant_id, conversation_id)).values
    return bool(head) and head["messages"][-1].content == answer


def crash_then_restart(point: str, *, dedupe: bool = True, directory: str | Path | None = None) -> dict[str, Any]:
    """One message command; the process "crashes" at ``point``; restart; the client retries.

    The API submits, a dispatcher sweep delivers. After the crash a new service opens the
    same files and sweeps, the client resends its request, and one more sweep runs (a
    command lost before its commit is accepted only now). Runs in ``directory`` (default: a
    fresh temporary one) on conversation ``conv-<point>`` of tenant ``acme``, so several
    points can share one directory.
    """
    if directory is None:
        with tempfile.TemporaryDirectory(prefix="course-11-") as tmp:
            return crash_then_restart(point, dedupe=dedupe, directory=tmp)
    name = point.replace("_", "-")
    request = ("acme", f"cmd-{name}", f"conv-{name}", WINDOW)
    service = ChatService(directory, crash_at=point, dedupe=dedupe)
    service.open_conversation("acme", request[2])
    crashed = None
    try:
        service.handle(*request)
        service.dispatch()
    except ledger.SimulatedCrash as crash:
        crashed = crash.point
    service = service.restart()  # a new Ledger object on the same file, then a sweep
    try:
        service.handle(*request)  # the client never got an answer: it retries
        service.dispatch()
        final = service.status("acme", request[1])
        at_head = _answer_is_head(service, "acme", request[2], final.answer)
    finally:
        service.close()
    return {"case": point, "crashed": crashed is not None, "deliveries": service.calls["deliveries"],
            "model_calls": service.calls["reply"], "deduplicated": service.calls["deduplicated"],
            "status": final.status, "client_got_answer": final.answer is not None, "answer_is_head": at_head}


def crash_table(points: tuple[str, ...], *, dedupe: bool = True) -> list[dict[str, Any]]:
    """:func:`crash_then_restart` for each point, all in one temporary directory.

    A connection is held open on each file for the whole table: closing the last connection
    of a WAL database checkpoints and syncs it, which made each scenario pay for it.
    """
    with tempfile.TemporaryDirectory(prefix="course-11-") as tmp:
        holders = [sqlite3.connect(Path(tmp) / name) for name in ("ledger.db", "checkpoints.db")]
        for conn in holders:  # a statement opens the file; WAL mode makes the hold count
            conn.execute("PRAGMA journal_mode=WAL")
        try:
            return [crash_then_restart(point, dedupe=dedupe, directory=tmp) for point in points]
        finally:
            for conn in holders:
                conn.close()


CHILD_PRELOAD = ("helpers.ledger.service", "helpers.business_ids")  # what chapter 11's process server imports


def run_dispatchers(server: preloaded_processes.ProcessServer, directory: str | Path, count: int = 2, *,
                    lease: float = 0.5, bill: Path | None = None, crash_once: Path | None = None,
                    max_seconds: float = 60.0, timeout: float = 90.0) -> list[int]:
    """Run ``count`` dispatcher processes on ``directory`` at once, named D1, D2, ... in the runs table.

    Each runs what ``python -m helpers.ledger.service dispatch DIRECTORY --until-drained ...``
    runs (``main(argv)``), in a child forked from ``server`` (which has imported LangGraph
    already); its output goes to ``DIRECTORY/D<i>.log``. Returns the exit codes in order:
    0 is a dispatcher that drained the outbox, ``ledger_service.DISPATCH_CRASH_EXIT`` (17) one that
    crashed on purpose; anything else raises.
    """
    children = []
    for i in range(1, count + 1):
        argv = ["dispatch", str(directory), "--lease", str(lease), "--poll", "0.02", "--until-drained",
                "--max-seconds", str(max_seconds), "--name", f"D{i}"]
        argv += ["--bill", str(bill)] if bill is not None else []
        argv += ["--crash-once", str(crash_once)] if crash_once is not None else []
        children.append(server.start(ledger_service.main, argv, log=Path(directory) / f"D{i}.log"))
    codes = server.wait(children, timeout)
    if any(code not in (0, ledger_service.DISPATCH_CRASH_EXIT) for code in codes):
        logs = "\n".join(Path(directory, f"D{i}.log").read_text(encoding="utf-8")[-1000:] for i in range(1, count + 1))
        raise RuntimeError(f"a dispatcher failed: exit codes {codes}\n{logs}")
    return codes


def _siblings(service: ChatService, config: dict[str, Any]) -> int:
    """Checkpoints of the thread that share their parent with another checkpoint."""
    parents = Counter(s.parent_config["configurable"]["checkpoint_id"]
                      for s in service.graph.get_state_history(config) if s.parent_config)
    return sum(n for n in parents.values() if n > 1)


def slow_run(directory: str | Path, *, renew: bool) -> dict[str, Any]:
    """Dispatcher A's model call outlives A's 30 s lease; dispatcher B sweeps meanwhile.

    Both are :class:`ChatService` objects on the same files and one ManualClock. A runs in a
    thread and its model call waits on an event; while it waits, the clock moves 40 s on
    (with ``renew``, in two steps, each followed by two of A's renewals) and B sweeps. Then A
    finishes. Returns the counts and what the ledger and the thread's head say.
    """
    clock, calls = ledger.ManualClock(), Counter()
    in_model, finish = threading.Event(), threading.Event()

    def held() -> None:
        in_model.set()
        finish.wait(30)

    a = ChatService(directory, calls=calls, clock=clock, renew=renew, renew_every=0.005, model_call=held, name="A")
    b = ChatService(directory, calls=calls, clock=clock, name="B")
    recorded: list[int] = []
    worker = threading.Thread(target=lambda: recorded.append(a.dispatch()))
    try:
        a.open_conversation("acme", "conv-slow")
        a.handle("acme", "cmd-slow", "conv-slow", WINDOW)
        worker.start()
        in_model.wait(30)
        for step in ((20, 20) if renew else (40,)):
            clock.advance(step)
            if renew:  # the second renewal from now surely read the advanced clock
                a.ledger.wait_for_renewals(a.ledger.renewals + 2)
        b_recorded = b.dispatch()
        finish.set()
        worker.join(30)
        config = b.thread_config("acme", "conv-slow")
        final = b.status("acme", "cmd-slow")
        runs = b.ledger.list_runs("acme", "conv-slow")
        return {"renewal": renew, "deliveries": calls["deliveries"], "model_calls": calls["reply"],
                "deduplicated": calls["deduplicated"],
                "history": checkpoints.history_table(b.graph, config, ("label", "step", "source", "next", "parent")),
                "recorded_by": "A" if recorded == [1] else "B" if b_recorded else "-",
                "stale_result_refused": recorded == [0] and b_recorded == 1,
                "sibling_checkpoints": _siblings(b, config), "status": final.status,
                "ledger_answer": final.answer,
                "head_answer": b.graph.get_state(config).values["messages"][-1].content,
                "attempts": [r.attempt for r in runs]}
    finally:
        finish.set()
        a.close()
        b.close()


JOBS_SCHEMA = """
CREATE TABLE jobs (
    seq           INTEGER PRIMARY KEY,            -- the order of acceptance
    thread_id     TEXT NOT NULL,
    status        TEXT NOT NULL DEFAULT 'queued'
                  CHECK (status IN ('queued', 'running', 'done', 'dead')),
    attempt       INTEGER NOT NULL DEFAULT 0,     -- the fencing token: every claim adds 1
    lease_expires REAL NOT NULL DEFAULT 0,        -- a running job's lease ends at this clock() value
    result        TEXT)
"""


def open_jobs_table(path: str | Path = ":memory:") -> sqlite3.Connection:
    """A connection in autocommit mode (each statement commits) to a file with an empty ``jobs`` table."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=10, check_same_thread=False)
    conn.execute(JOBS_SCHEMA)
    return conn


ACCEPT_SCHEMA = ("CREATE TABLE IF NOT EXISTS commands (tenant_id TEXT NOT NULL, command_id TEXT NOT NULL, "
                 "fingerprint TEXT NOT NULL, PRIMARY KEY (tenant_id, command_id))")


def open_commands_table(path: str | Path = ":memory:", *, timeout: float = 10.0) -> sqlite3.Connection:
    """An autocommit connection (WAL for files) to a database holding :data:`ACCEPT_SCHEMA`.

    ``check_same_thread=False`` only so that a checker may close it from another thread;
    use one connection per thread.
    """
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    if str(path) != ":memory:":
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(ACCEPT_SCHEMA)
    return conn
