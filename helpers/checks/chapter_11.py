"""Checks for chapter 11 (the command ledger)."""

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
    from helpers.business_ids import open_commands_table

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
    from helpers.business_ids import open_commands_table

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
