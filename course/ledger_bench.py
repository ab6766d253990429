"""Throughput of ``helpers.ledger`` on a file database: accepted commands per second.

``benchmark_ledger(path_dir)`` returns a dict; run ``python -m course.ledger_bench [DIR]``
to print it. Two workloads, each on a fresh database file in ``path_dir``:

* ``single_writer``: one thread submits ``single_commands`` distinct commands.
* ``concurrent``: ``threads`` threads share one ``Ledger``; each makes
  ``per_thread`` submissions, of which ``duplicate_ratio`` are retries (same key, same
  payload) of a command that thread already submitted. Only first submissions are accepted.

Numbers depend on the disk and on ``synchronous`` (FULL fsyncs the WAL on every commit).
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from helpers.ledger import Ledger, new_command_id

__all__ = ["benchmark_ledger"]


def _single_writer(path: Path, n: int, synchronous: str) -> dict[str, Any]:
    with Ledger(path, synchronous=synchronous) as ledger:
        ledger.create_conversation("bench", "conv-0")
        start = time.perf_counter()
        accepted = sum(ledger.submit("bench", new_command_id(), "conv-0", {"i": i}).created
                       for i in range(n))
        seconds = time.perf_counter() - start
    return {"submissions": n, "accepted": accepted, "seconds": seconds,
            "accepted_per_second": accepted / seconds}


def _concurrent(path: Path, threads: int, per_thread: int, duplicate_ratio: float,
                synchronous: str) -> dict[str, Any]:
    with Ledger(path, synchronous=synchronous) as ledger:
        for t in range(threads):  # one conversation per worker thread, as a real API would
            ledger.create_conversation("bench", f"conv-{t}")
        barrier = threading.Barrier(threads + 1)
        accepted = [0] * threads
        errors: list[BaseException] = []

        def work(t: int) -> None:
            try:
                barrier.wait()
                last: tuple[str, dict] | None = None
                credit = 0.0
                for i in range(per_thread):
                    credit += duplicate_ratio
                    if last is not None and credit >= 1.0:  # a network retry of the last command
                        credit -= 1.0
                        key, payload = last
                    else:
                        key, payload = new_command_id(), {"t": t, "i": i}
                        last = (key, payload)
                    accepted[t] += ledger.submit("bench", key, f"conv-{t}", payload).created
            except BaseException as exc:  # surface worker failures to the caller
                errors.append(exc)

        workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
        for w in workers:
            w.start()
        barrier.wait()
        start = time.perf_counter()
        for w in workers:
            w.join()
        seconds = time.perf_counter() - start
        if errors:
            raise errors[0]
    with closing(sqlite3.connect(path)) as conn:
        rows = conn.execute("SELECT COUNT(*) FROM commands").fetchone()[0]
    total, done = threads * per_thread, sum(accepted)
    if rows != done:
        raise AssertionError(f"ledger holds {rows} commands but {done} were reported accepted")
    return {"threads": threads, "submissions": total, "accepted": done,
            "duplicates": total - done, "seconds": seconds,
            "accepted_per_second": done / seconds, "submissions_per_second": total / seconds}


def benchmark_ledger(path_dir: str | Path, *, single_commands: int = 2000, threads: int = 8,
                     per_thread: int = 500, duplicate_ratio: float = 0.5,
                     synchronous: str = "FULL") -> dict[str, Any]:
    """Measure accepted commands per second; returns ``{"single_writer": ..., "concurrent": ...}``."""
    if not 0.0 <= duplicate_ratio < 1.0:
        raise ValueError("duplicate_ratio must be in [0, 1)")
    base = Path(path_dir)
    base.mkdir(parents=True, exist_ok=True)
    stamp = new_command_id()
    return {
        "synchronous": synchronous,
        "single_writer": _single_writer(base / f"bench-single-{stamp}.db", single_commands,
                                        synchronous),
        "concurrent": _concurrent(base / f"bench-threads-{stamp}.db", threads, per_thread,
                                  duplicate_ratio, synchronous),
    }


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="ledger-bench-")
    for level in ("FULL", "NORMAL"):
        print(json.dumps(benchmark_ledger(target, synchronous=level), indent=2))
