"""Throughput of ``helpers.ledger`` next to a plain ``INSERT OR IGNORE`` loop, as a ratio.

    python -m course.ledger_bench [--commands N] [--processes P] [--synchronous FULL]

Both sides write to the *same* SQLite file with the *same* settings (WAL,
``synchronous``, busy timeout, one commit per row): the ledger's ``submit`` (validation,
fingerprint, run ID, one ``INSERT ... SELECT`` that finds the conversation on its thread
and inserts the command, then the record) against ``INSERT OR IGNORE INTO plain ...`` of the
same key and payload. Both commits usually write two pages: a row and its key. They take
turns in the same run, so a change in machine load hits both. Two workloads:

* ``single_writer``: one thread, one ledger row then one plain row (or the other way round);
  it also times the ledger's SQL alone (``submit_command`` with the fingerprint and run ID
  computed beforehand), which splits the gap into database work and Python work
  (validation, fingerprint, run ID, the record);
* ``processes``: ``processes`` processes at once, each with its own connections (and its own
  conversation, as API workers would have), released together by a barrier; all write
  ledger rows in one round and plain rows in the next, for ``rounds`` rounds.

``ratio`` = ledger accepted/s divided by plain inserts/s, measured ``repeats`` times in
one run (single writer: consecutive blocks of rows; processes: each round) and
reported as the median, with the lowest and highest: a burst of load that lands on one
block moves the range, not the result. The target is a median >= 0.75.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sqlite3
import statistics
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from helpers.ledger import Ledger, new_command_id, payload_json, run_id_for, submit_command, utc_now

__all__ = ["RATIO_TARGET", "benchmark_ledger"]

RATIO_TARGET = 0.75
PLAIN_TABLE = ("CREATE TABLE IF NOT EXISTS plain (tenant_id TEXT NOT NULL, command_id TEXT NOT NULL, "
               "payload TEXT NOT NULL, PRIMARY KEY (tenant_id, command_id))")


class _Writers:
    """A ledger and a plain connection on one file, with the same settings."""

    def __init__(self, path: Path, synchronous: str, conversation: str) -> None:
        self.ledger = Ledger(path, synchronous=synchronous, timeout=60)
        self.thread = self.ledger.create_conversation("bench", conversation).thread_id
        self.conversation = conversation
        self.plain = sqlite3.connect(path, timeout=60, isolation_level=None)
        self.plain.execute(f"PRAGMA synchronous = {synchronous}")  # checked by Ledger() above
        self.plain.execute(PLAIN_TABLE)
        self.sql = sqlite3.connect(path, timeout=60, isolation_level=None)  # the ledger's statements alone
        self.sql.execute(f"PRAGMA synchronous = {synchronous}")
        self.sql.execute("PRAGMA foreign_keys = ON")  # as the ledger's own connections

    def one(self, kind: str, i: int) -> float:
        """Write one row (a new key) with ``kind``; the seconds it took."""
        key, payload = new_command_id(), {"text": "I prefer a window seat", "i": i}
        if kind == "sql":
            body, digest = payload_json(payload)
            run_id = run_id_for("bench", key)
        began = time.perf_counter()
        if kind == "ledger":
            self.ledger.submit("bench", key, self.conversation, payload)
        elif kind == "sql":
            submit_command(self.sql, "bench", key, self.conversation, self.thread, body, digest, run_id, utc_now())
        else:
            self.plain.execute("INSERT OR IGNORE INTO plain VALUES (?, ?, ?)", ("bench", key, json.dumps(payload)))
        return time.perf_counter() - began

    def run(self, kind: str, n: int, start: int) -> float:
        return sum(self.one(kind, i) for i in range(start, start + n))

    def close(self) -> None:
        self.ledger.close()
        self.plain.close()
        self.sql.close()


def _rates(blocks: list[dict[str, float]], rows: int, side: str = "ledger") -> dict[str, Any]:
    """Rates over all ``blocks`` (seconds per kind), and the median and range of each block's ratio."""
    total = {kind: sum(block[kind] for block in blocks) for kind in blocks[0]}
    ratios = [block["plain"] / block[side] for block in blocks]
    return {"rows_each": rows, f"{side}_per_s": rows / total[side], "plain_per_s": rows / total["plain"],
            "ratio": statistics.median(ratios), "ratio_low": min(ratios), "ratio_high": max(ratios),
            "repeats": len(blocks)}


def _single_writer(path: Path, commands: int, synchronous: str, repeats: int) -> dict[str, Any]:
    # Row by row, alternating which side goes first: a load spike hits both sides alike.
    writers = _Writers(path, synchronous, "conv-0")
    blocks = [{"ledger": 0.0, "sql": 0.0, "plain": 0.0} for _ in range(repeats)]
    try:
        for kind in blocks[0]:  # warm up: statement caches, first pages
            writers.run(kind, 20, 0)
        for i in range(commands):
            block = blocks[i * repeats // commands]
            for kind in (("ledger", "sql", "plain") if i % 2 == 0 else ("plain", "sql", "ledger")):
                block[kind] += writers.one(kind, i)
    finally:
        writers.close()
    sql = _rates(blocks, commands, side="sql")
    return {**_rates(blocks, commands), "sql_per_s": sql["sql_per_s"], "sql_ratio": sql["ratio"],
            "sql_ratio_low": sql["ratio_low"], "sql_ratio_high": sql["ratio_high"]}


def _worker(path: str, index: int, phases: list[str], batch: int, synchronous: str, barrier: Any) -> None:
    writers = _Writers(Path(path), synchronous, f"conv-{index}")
    try:
        for n, kind in enumerate(phases):
            barrier.wait()
            writers.run(kind, batch, n * batch)
            barrier.wait()
    finally:
        writers.close()


def _processes(path: Path, processes: int, per_process: int, rounds: int, synchronous: str) -> dict[str, Any]:
    phases = [kind for r in range(rounds) for kind in (("ledger", "plain") if r % 2 == 0 else ("plain", "ledger"))]
    batch = per_process // rounds
    Ledger(path, synchronous=synchronous).close()  # create the schema once, before the race
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(PLAIN_TABLE)
    context = multiprocessing.get_context("spawn")  # portable, and no inherited connections
    barrier = context.Barrier(processes + 1, timeout=300)
    workers = [context.Process(target=_worker, args=(str(path), i, phases, batch, synchronous, barrier))
               for i in range(processes)]
    for worker in workers:
        worker.start()
    blocks = [{"ledger": 0.0, "plain": 0.0} for _ in range(rounds)]  # each round: a ledger and a plain phase
    try:
        for n, kind in enumerate(phases):
            barrier.wait()
            began = time.perf_counter()
            barrier.wait()
            blocks[n // 2][kind] += time.perf_counter() - began
    except BaseException:
        barrier.abort()  # the workers stop waiting at once
        raise
    finally:
        for worker in workers:
            worker.join(60)
            if worker.is_alive():
                worker.kill()
    if any(w.exitcode != 0 for w in workers):
        raise RuntimeError(f"a benchmark process failed: exit codes {[w.exitcode for w in workers]}")
    return {**_rates(blocks, batch * rounds * processes), "processes": processes}


def benchmark_ledger(path_dir: str | Path, *, commands: int = 2000, processes: int = 8, per_process: int = 120,
                     rounds: int = 8, synchronous: str = "FULL", repeats: int = 5) -> dict[str, Any]:
    """Ledger vs plain inserts, single writer and ``processes`` processes; see the module doc.

    The single writer's ``commands`` rows are timed in ``repeats`` blocks; each of the
    processes' ``rounds`` has a ledger phase and a plain phase.
    """
    if rounds < 1 or not 1 <= repeats <= commands:
        raise ValueError("rounds must be >= 1, and repeats between 1 and commands")
    base = Path(path_dir)
    base.mkdir(parents=True, exist_ok=True)
    stamp = new_command_id()
    return {
        "synchronous": synchronous,
        "single_writer": _single_writer(base / f"bench-single-{stamp}.db", commands, synchronous, repeats),
        "processes": _processes(base / f"bench-procs-{stamp}.db", processes, per_process, rounds, synchronous),
    }


def rows_for_table(result: dict[str, Any]) -> list[dict[str, str]]:
    """The benchmark as table rows (for ``course.bench`` and the CLI)."""
    rows = []
    procs = result["processes"]["processes"]
    ratio_header = "ratio: median (range)"
    for name, label in (("single_writer", "single writer"), ("processes", f"{procs} processes")):
        part = result[name]
        rows.append({"workload": label, "rows each": str(part["rows_each"]),
                     "ledger accepted/s": f"{part['ledger_per_s']:.0f}",
                     "INSERT OR IGNORE/s": f"{part['plain_per_s']:.0f}",
                     ratio_header: f"{part['ratio']:.2f} ({part['ratio_low']:.2f}–{part['ratio_high']:.2f})",
                     f"≥ {RATIO_TARGET}": "yes" if part["ratio"] >= RATIO_TARGET else "NO"})
        if "sql_ratio" in part:
            rows.append({"workload": f"{label}, SQL alone", "rows each": str(part["rows_each"]),
                         "ledger accepted/s": f"{part['sql_per_s']:.0f}", "INSERT OR IGNORE/s": "(same)",
                         ratio_header: f"{part['sql_ratio']:.2f} ({part['sql_ratio_low']:.2f}–"
                                       f"{part['sql_ratio_high']:.2f})", f"≥ {RATIO_TARGET}": "-"})
    return rows


def main(argv: list[str] | None = None) -> int:
    from helpers.text_tables import format_table

    parser = argparse.ArgumentParser(prog="python -m course.ledger_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=2000, help="single-writer rows per side")
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--per-process", type=int, default=120, help="rows per process per side")
    parser.add_argument("--synchronous", default="FULL", choices=("OFF", "NORMAL", "FULL", "EXTRA"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ledger-bench-") as folder:
        result = benchmark_ledger(folder, commands=args.commands, processes=args.processes,
                                  per_process=args.per_process, synchronous=args.synchronous)
    print(f"command ledger vs plain INSERT OR IGNORE (same SQLite file, WAL, synchronous={result['synchronous']}, "
          "one commit per row, taking turns; ratio: median of the repeats, lowest-highest):")
    print(format_table(rows_for_table(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
