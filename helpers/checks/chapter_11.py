"""Checks for chapter 11 (the command ledger).

11.1 accepts on the ``commands`` table of ``helpers.ledger.experiments.ACCEPT_SCHEMA``; 11.2 to 11.4
work on the small ``jobs`` table of ``helpers.ledger.experiments.JOBS_SCHEMA`` (a command's
delivery columns alone), each on fresh rows the chapter never shows.
"""

from __future__ import annotations

import sqlite3
import tempfile
import threading
from pathlib import Path
from typing import Any

from .protocol import Fail, NotAttempted, call_answer, exercise, expect_type

# ----------------------------------------------------------------------------- 11.1
RACERS = 8
PAUSE_TIMEOUT = 0.5  # seconds a caller waits for the others at the gate (see _Gate)


def _call(func: Any, *args: Any, what: str, case: str) -> Any:
    try:
        return call_answer(func, *args, what=what)
    except (Fail, NotAttempted):
        raise
    except sqlite3.OperationalError as exc:
        formatted = ("syntax", "unrecognized token", "one statement")
        if "quote" in case and any(word in str(exc) for word in formatted):
            raise Fail(f"on {case} SQLite said {exc!r}: pass every value as a ? parameter "
                       "(conn.execute(sql, (tenant_id, command_id, fp))), never format it into the SQL") from None
        if "ON CONFLICT" in str(exc):
            raise Fail(f"on {case} SQLite said {exc!r}: the conflict target must be the table's key, "
                       "ON CONFLICT (tenant_id, command_id)") from None
        raise Fail(f"your function raised OperationalError on {case}: {exc}") from None
    except sqlite3.IntegrityError as exc:
        raise Fail(f"your function raised IntegrityError on {case} ({exc}): the key already exists; "
                   "use INSERT ... ON CONFLICT (tenant_id, command_id) DO NOTHING, then read the stored row") from None
    except Exception as exc:
        raise Fail(f"your function raised {type(exc).__name__} on {case}: {exc}") from None


def _pair(got: Any, case: str) -> tuple[Any, Any]:
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise Fail(f"on {case} you returned {got!r}; return a pair (stored_fingerprint, created)")
    stored, created = got
    expect_type(stored, str, f"the stored fingerprint, on {case}")
    if not isinstance(created, bool):
        raise Fail(f"on {case} 'created' is {created!r} ({type(created).__name__}); return a bool, "
                   "e.g. cursor.rowcount == 1 after the INSERT")
    return stored, created


class _Gate:
    """Holds every caller right after its first read until all callers have read.

    A check-then-insert implementation reads, finds nothing, and only then inserts: held
    at the gate, all callers read before anyone inserts, which is exactly the interleaving
    that breaks it. An insert-first implementation has already inserted when it reads,
    so holding it changes nothing. A caller that never reads passes the gate on return.
    """

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=PAUSE_TIMEOUT)

    def wait(self) -> None:
        try:
            self.barrier.wait()
        except threading.BrokenBarrierError:  # someone holds a lock or never came: go on
            pass


def _is_read(sql: Any) -> bool:
    text = str(sql).lstrip().upper()
    return text.startswith(("SELECT", "WITH")) and "INSERT" not in text


class _Cursor:
    def __init__(self, cursor: sqlite3.Cursor, owner: _GatedConnection) -> None:
        self._cursor, self._owner = cursor, owner

    def execute(self, sql: str, *args: Any) -> _Cursor:
        self._cursor.execute(sql, *args)
        self._owner._after(sql)
        return self

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)

    def __iter__(self):
        return iter(self._cursor)


class _GatedConnection:
    """A sqlite3 connection whose first read waits at a :class:`_Gate`."""

    def __init__(self, conn: sqlite3.Connection, gate: _Gate) -> None:
        self._conn, self._gate, self.passed = conn, gate, False

    def _after(self, sql: Any) -> None:
        if not self.passed and _is_read(sql):
            self.pass_gate()

    def pass_gate(self) -> None:
        if not self.passed:
            self.passed = True
            self._gate.wait()

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        cursor = self._conn.execute(sql, *args)
        self._after(sql)
        return cursor

    def cursor(self, *args: Any) -> _Cursor:
        return _Cursor(self._conn.cursor(*args), self)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def __enter__(self) -> Any:
        return self._conn.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self._conn.__exit__(*exc)


def _race(accept: Any, path: Path, key: str, fingerprints: list[str], *, gated: bool) -> list[Any]:
    from helpers.ledger.experiments import open_commands_table

    n = len(fingerprints)
    start = threading.Barrier(n)
    gate = _Gate(n)
    results: list[Any] = [None] * n
    conns = [open_commands_table(path) for _ in range(n)]

    def worker(i: int) -> None:
        conn: Any = _GatedConnection(conns[i], gate) if gated else conns[i]
        try:
            start.wait(10)
            results[i] = accept(conn, "acme", key, fingerprints[i])
        except BaseException as exc:  # counted by the caller
            results[i] = exc
        finally:
            if gated:
                conn.pass_gate()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for conn in conns:
        conn.close()
    if any(t.is_alive() for t in threads):
        raise Fail("some concurrent calls never returned: do not keep a transaction open "
                   "(the connection autocommits each statement)")
    return results


def _judge_race(results: list[Any], fingerprints: list[str], rows: list[tuple], label: str) -> None:
    n = len(results)
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        first = errors[0]
        name = type(first).__name__
        if isinstance(first, sqlite3.IntegrityError):
            raise Fail(f"{label}: {len(errors)} of {n} concurrent callers raised IntegrityError. Your function "
                       "checks first and inserts later: all callers found no row, then all inserted. Insert first "
                       "(ON CONFLICT (tenant_id, command_id) DO NOTHING), then read the stored row")
        raise Fail(f"{label}: {len(errors)} of {n} concurrent callers raised {name}: {first}")
    pairs = [_pair(r, f"{label} (concurrent call)") for r in results]
    created = sum(1 for _, c in pairs if c)
    if len(rows) != 1:
        raise Fail(f"{label}: the table holds {len(rows)} rows for the key after {n} concurrent calls; expected 1")
    stored = rows[0][0]
    if created != 1:
        hint = ("your function decides 'created' from a check made before the insert: all callers checked, found "
                "nothing, and claimed the command. Decide it from the INSERT itself (cursor.rowcount == 1)"
                if created > 1 else "nobody claimed the command: 'created' must be True for the caller whose INSERT "
                "added the row (cursor.rowcount == 1)")
        raise Fail(f"{label}: {created} of {n} concurrent callers got created=True, expected exactly 1; {hint}")
    wrong = sorted({fp for fp, _ in pairs if fp != stored})
    if wrong:
        raise Fail(f"{label}: some callers got a fingerprint that is not the stored one; after the INSERT, SELECT the "
                   "fingerprint of (tenant_id, command_id) and return that, not the one passed in")
    winner = next(i for i, (_, c) in enumerate(pairs) if c)
    if fingerprints[winner] != stored:
        raise Fail(f"{label}: the caller that got created=True did not insert the stored row")


@exercise("11.1")
def check_accept(accept):
    from helpers.ledger.experiments import open_commands_table

    if accept is ... or not callable(accept):
        call_answer(accept, what="accept(conn, tenant_id, command_id, payload_fingerprint)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "commands.db"
        conn = open_commands_table(path)
        try:
            what = "accept(conn, tenant_id, command_id, payload_fingerprint)"
            first = _pair(_call(accept, conn, "acme", "cmd-1", "fp-a", what=what, case="a new key"), "a new key")
            if first != ("fp-a", True):
                raise Fail(f"for a new key you returned {first!r}, expected ('fp-a', True)")
            again = _pair(_call(accept, conn, "acme", "cmd-1", "fp-a", what=what, case="a retry"), "a retry")
            if again[1]:
                raise Fail("a retry (same key, same fingerprint) got created=True; only the call whose INSERT added "
                           "the row may say True: use cursor.rowcount == 1 after INSERT ... ON CONFLICT DO NOTHING "
                           "(INSERT OR REPLACE and DO UPDATE rewrite the row, so they count as a change)")
            other = _pair(_call(accept, conn, "acme", "cmd-1", "fp-b", what=what,
                                case="the same key with another payload"), "the same key with another payload")
            stored = conn.execute("SELECT fingerprint FROM commands "
                                  "WHERE tenant_id = 'acme' AND command_id = 'cmd-1'").fetchall()
            if stored != [("fp-a",)]:
                raise Fail("the same key with another payload overwrote the stored command: use ON CONFLICT ... "
                           "DO NOTHING (not INSERT OR REPLACE or DO UPDATE), the first payload must win")
            if other != ("fp-a", False):
                raise Fail(f"the same key with another payload returned {other!r}, expected ('fp-a', False): "
                           "return the fingerprint read from the table, so the caller can see it differs from its own")
            tenant_b = _pair(_call(accept, conn, "globex", "cmd-1", "fp-c", what=what,
                                   case="the same command id in another tenant"), "another tenant")
            if tenant_b != ("fp-c", True):
                raise Fail(f"the same command id in another tenant returned {tenant_b!r}, expected ('fp-c', True): "
                           "the key is (tenant_id, command_id), filter the SELECT on both")
            quoted = _pair(_call(accept, conn, "acme", "it's-mine", "fp-q", what=what,
                                 case="a command id containing a quote"), "a command id containing a quote")
            if quoted != ("fp-q", True):
                raise Fail(f"a command id containing a quote returned {quoted!r}, expected ('fp-q', True)")
            count = conn.execute("SELECT COUNT(*) FROM commands").fetchone()[0]
            if count != 3:
                raise Fail(f"after 5 calls on 3 distinct keys the table holds {count} rows, expected 3")
        finally:
            conn.close()
        rounds = [("same payload", True, ["fp-same"] * RACERS), ("same payload", True, ["fp-same"] * RACERS),
                  ("different payloads", True, [f"fp-{i}" for i in range(RACERS)]),
                  ("same payload, no gate", False, ["fp-same"] * RACERS),
                  ("different payloads, no gate", False, [f"fp-{i}" for i in range(RACERS)])]
        for r, (name, gated, fps) in enumerate(rounds, 1):
            key = f"race-{r}"
            results = _race(accept, path, key, fps, gated=gated)
            with sqlite3.connect(path) as check_conn:
                rows = check_conn.execute("SELECT fingerprint FROM commands "
                                          "WHERE tenant_id = 'acme' AND command_id = ?",
                                          (key,)).fetchall()
            _judge_race(results, fps, rows, f"race {r} ({RACERS} threads, {name})")
    return (f"exactly one caller created each key in {len(rounds)} races of {RACERS} threads; "
            "retries and mismatches read the stored row")


# ----------------------------------------------------------------------------- 11.2 to 11.4: the jobs table
def _jobs(rows: list[tuple[str, str, int, float]]) -> sqlite3.Connection:
    """A fresh ``jobs`` table holding ``rows`` of (thread_id, status, attempt, lease_expires), seq 1, 2, ..."""
    from helpers.ledger.experiments import open_jobs_table

    conn = open_jobs_table()
    conn.executemany("INSERT INTO jobs (thread_id, status, attempt, lease_expires) VALUES (?, ?, ?, ?)", rows)
    return conn


def _dump(conn: sqlite3.Connection) -> list[tuple]:
    return conn.execute("SELECT seq, thread_id, status, attempt, lease_expires, result FROM jobs "
                        "ORDER BY seq").fetchall()


def _run(func: Any, *args: Any, what: str, case: str) -> Any:
    try:
        return call_answer(func, *args, what=what)
    except (Fail, NotAttempted):
        raise
    except sqlite3.Error as exc:
        if any(word in str(exc) for word in ("syntax error", "unrecognized token")):
            raise Fail(f"on {case} SQLite said {exc!r}: pass every value as a ? parameter, never format it into "
                       "the SQL (a quote in a value breaks the statement)") from None
        raise Fail(f"on {case} SQLite said {type(exc).__name__}: {exc}; the table is jobs(seq, thread_id, status, "
                   "attempt, lease_expires, result), see ledger_experiments.JOBS_SCHEMA") from None
    except Exception as exc:
        raise Fail(f"your function raised {type(exc).__name__} on {case}: {exc}") from None


@exercise("11.2")
def check_store_result(store_result):
    """Fencing: only the current attempt of a running job may store its result, once."""
    what = "store_result(conn, seq, attempt, result)"
    if store_result is ... or not callable(store_result):
        call_answer(store_result, what=what)
    # seq 1: running, taken over (attempt 2 holds it); seq 2: queued, never claimed; seq 3: running, attempt 1
    conn = _jobs([("t-1", "running", 2, 1030.0), ("t-2", "queued", 0, 0.0), ("t-3", "running", 1, 1030.0)])
    try:
        cases = [
            ("a stale worker (attempt 1 of job 1, which attempt 2 now holds)", (1, 1, "stale answer"), False,
             "a stale worker's write must change nothing: write only WHERE seq = ? AND attempt = ? (its token)"),
            ("attempt 0 of a queued job (no claim ever made it)", (2, 0, "forged"), False,
             "a job that is not running has no current worker: add AND status = 'running', or attempt 0 of a "
             "queued job stores a result that no claim produced"),
            ("a token from the future (attempt 3 of job 1)", (1, 3, "future"), False,
             "only the current attempt may write: compare with =, not >= or <="),
            ("the current worker (attempt 2 of job 1)", (1, 2, "B's answer"), True,
             "the current attempt of a running job must store its result and set status = 'done'"),
            ("the current worker again (job 1 is done)", (1, 2, "B's second answer"), False,
             "the first result wins: once the job is done, nothing may overwrite it (AND status = 'running')"),
            ("a result with a quote in it (attempt 1 of job 3)", (3, 1, "it's done"), True,
             "pass values as ? parameters, never format them into the SQL"),
        ]
        for case, args, expected, hint in cases:
            before = _dump(conn)
            got = _run(store_result, conn, *args, what=what, case=case)
            if not isinstance(got, bool):
                raise Fail(f"on {case} you returned {got!r}; return a bool: cursor.rowcount == 1 after the UPDATE")
            after = _dump(conn)
            changed = after != before
            if expected and (not got or not changed):
                raise Fail(f"{case}: {hint}")
            if not expected and (got or changed):
                raise Fail(f"{case}: returned {got!r} and {'changed' if changed else 'did not change'} the table; "
                           f"{hint}")
        rows = {seq: (status, attempt, result) for seq, _, status, attempt, _, result in _dump(conn)}
        if rows[1] != ("done", 2, "B's answer") or rows[3] != ("done", 1, "it's done"):
            raise Fail(f"after the calls the jobs hold {rows}; a stored result sets status = 'done', keeps the "
                       "attempt and stores the result text as given")
        if rows[2] != ("queued", 0, None):
            raise Fail("the queued job changed: a write without its token must not touch it")
    finally:
        conn.close()
    return "only the current attempt of a running job wrote, once; stale, forged and late writes changed nothing"


def _claim_for(conn: sqlite3.Connection, next_job: Any, dispatcher: str, case: str) -> int | None:
    got = _run(next_job, conn, what="next_job(conn)", case=case)
    if got is not None and (isinstance(got, bool) or not isinstance(got, int)):
        raise Fail(f"on {case} next_job returned {got!r}; return a job's seq (an int) or None")
    if got is not None:
        row = conn.execute("SELECT status FROM jobs WHERE seq = ?", (got,)).fetchone()
        if row is None:
            raise Fail(f"on {case} next_job returned seq {got}, which is no job")
        if row[0] != "queued":
            raise Fail(f"on {case} next_job returned job {got}, which is {row[0]}: only a queued job can be claimed")
        conn.execute("UPDATE jobs SET status = 'running', attempt = attempt + 1 WHERE seq = ?", (got,))
    return got


@exercise("11.3")
def check_next_job(next_job):
    """Per-thread FIFO: two dispatchers taking turns never run two jobs of a thread at once, nor out of order."""
    what = "next_job(conn)"
    if next_job is ... or not callable(next_job):
        call_answer(next_job, what=what)
    # seq: 1 t-kim, 2 t-ana, 3 t-kim, 4 t-zoe (dead earlier: a dead letter does not block), 5 t-zoe, 6 t-ana,
    # 7 t-kim. At the first ask, the oldest head's thread sorts neither first nor last by name (ana < kim < zoe):
    # ordering the heads by thread_id, either way, picks the wrong one.
    conn = _jobs([("t-kim", "queued", 0, 0.0), ("t-ana", "queued", 0, 0.0), ("t-kim", "queued", 0, 0.0),
                  ("t-zoe", "dead", 3, 0.0), ("t-zoe", "queued", 0, 0.0), ("t-ana", "queued", 0, 0.0),
                  ("t-kim", "queued", 0, 0.0)])
    try:
        names = {1: "t-kim's 1st", 2: "t-ana's 1st", 3: "t-kim's 2nd", 5: "t-zoe's 2nd", 6: "t-ana's 2nd",
                 7: "t-kim's 3rd"}
        # (dispatcher, expected claim) in turn; None: nothing may run now; ("done", seq): a job finishes
        script = [("D1", 1), ("D2", 2), ("D1", 5), ("D2", None), ("done", 2), ("D1", 6), ("D2", None),
                  ("done", 1), ("D2", 3), ("done", 5), ("done", 6), ("D1", None), ("done", 3), ("D2", 7),
                  ("D1", None), ("done", 7), ("D2", None)]
        for step, (who, expected) in enumerate(script, 1):
            if who == "done":
                conn.execute("UPDATE jobs SET status = 'done' WHERE seq = ?", (expected,))
                continue
            running = [names[s] for (s,) in conn.execute("SELECT seq FROM jobs WHERE status = 'running' ORDER BY seq")]
            case = f"step {step}, {who} asks (running: {', '.join(running) or 'nothing'})"
            got = _claim_for(conn, next_job, who, case)
            if got == expected:
                continue
            if expected is None:
                thread = conn.execute("SELECT thread_id FROM jobs WHERE seq = ?", (got,)).fetchone()[0]
                raise Fail(f"{case}: you returned {names.get(got, got)}, but {thread} already has a running job; "
                           "a thread's next job waits until its running one is done")
            if got is None:
                raise Fail(f"{case}: you returned None, but {names[expected]} may run now")
            older = conn.execute("SELECT COUNT(*) FROM jobs WHERE thread_id = (SELECT thread_id FROM jobs "
                                 "WHERE seq = ?) AND seq < ? AND status IN ('queued', 'running')",
                                 (got, got)).fetchone()[0]
            if older:
                raise Fail(f"{case}: you returned {names.get(got, got)}, but an older job of its thread is still "
                           "waiting or running; per-thread FIFO means the thread's oldest unfinished job goes first")
            raise Fail(f"{case}: you returned {names.get(got, got)}, expected {names[expected]}: of the threads "
                       "that may run, take the oldest head (the smallest seq)")
    finally:
        conn.close()
    return "two dispatchers in turn: one job per thread at a time, each thread in seq order, oldest head first"


@exercise("11.4")
def check_expire_leases(expire_leases):
    """Leases that run out: back to the queue, or dead after max_attempts; nothing else changes."""
    what = "expire_leases(conn, now, max_attempts)"
    if expire_leases is ... or not callable(expire_leases):
        call_answer(expire_leases, what=what)
    # seq 1: running, lease ends at 100 (attempt 1); 2: running, ends 100, attempt 3; 3: running, ends 200;
    # 4: done with an old lease; 5: queued; 6: running, ends exactly 150, attempt 2; 7: dead
    rows = [("t-1", "running", 1, 100.0), ("t-2", "running", 3, 100.0), ("t-3", "running", 1, 200.0),
            ("t-4", "done", 1, 50.0), ("t-5", "queued", 0, 0.0), ("t-6", "running", 2, 150.0),
            ("t-7", "dead", 3, 40.0)]
    conn = _jobs(rows)
    try:
        before = _dump(conn)
        early = _run(expire_leases, conn, 99.0, 3, what=what, case="now = 99 (no running job's lease has ended)")
        after = _dump(conn)
        if any(old != new and old[2] != "running" for old, new in zip(before, after, strict=True)) or (
                isinstance(early, list) and {4, 5, 7} & set(early)):
            raise Fail("only running jobs have leases: done, queued and dead jobs must not change, nor be returned")
        if early != [] or after != before:
            raise Fail(f"at now = 99 no lease has ended, yet you returned {early!r} or changed the table; "
                       "a lease has ended when lease_expires <= now")
        got = _run(expire_leases, conn, 150.0, 3, what=what, case="now = 150, max_attempts = 3")
        if not isinstance(got, list) or any(isinstance(s, bool) or not isinstance(s, int) for s in got):
            raise Fail(f"you returned {got!r}; return a list of the seqs made dead, as ints")
        state = {seq: (status, attempt, lease) for seq, _, status, attempt, lease, _ in _dump(conn)}
        problems = []
        if state[1][0] != "queued":
            problems.append("job 1's lease ended at 100 after attempt 1 of 3: it goes back to 'queued' for the "
                            f"next claim (it is {state[1][0]!r})")
        if state[2][0] != "dead":
            problems.append(f"job 2's lease ended after attempt 3 of 3: it is dead now (it is {state[2][0]!r})")
        if state[6][0] != "queued":
            problems.append("job 6's lease ends at exactly 150, so at now = 150 it has ended (lease_expires <= now)"
                            f" and it goes back to 'queued' (it is {state[6][0]!r})")
        if state[3][0] != "running":
            problems.append("job 3's lease lasts until 200: at 150 its worker still holds it")
        if state[4][0] != "done" or state[5][0] != "queued" or state[7][0] != "dead":
            problems.append("only running jobs have leases: done, queued and dead jobs must not change")
        if any(state[s][1] != before[s - 1][3] for s in state):
            problems.append("keep every attempt as it is: the next claim adds 1 (the fencing token); changing it "
                            "here would let a stale worker's token match again")
        if problems:
            raise Fail(problems[0])
        if sorted(got) != [2]:
            raise Fail(f"you returned {got!r}; return the seqs of the jobs made dead now ([2]), not every expired job")
        again = _run(expire_leases, conn, 150.0, 3, what=what, case="a second call at now = 150")
        if again != []:
            raise Fail(f"a second call at the same time returned {again!r}: a job that is already dead is not "
                       "made dead again (only running jobs are looked at)")
    finally:
        conn.close()
    return "ended leases went back to the queue, the one out of attempts died, everything else stayed"
