"""What each durability mode costs: chapter 08's timing harness around the chapter's graph.

:func:`measure_costs` times ``invoke`` per mode on a SQLite file (interleaved rounds after a
warm-up, optionally with a stand-in for node work and for a slower database), and
:func:`summarize_costs` gives medians and ratios to ``sync``, which the chapter prints as
tables. The graph is chapter 08's :func:`helpers.durability_experiments.linear_graph`, shown
in the chapter.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .counting_saver import CountingSaver
from .durability_experiments import MODES, linear_graph, open_sqlite_saver


def measure_costs(workdir: str | Path, modes: Sequence[str] = MODES, runs: int = 30, warmup: int = 3,
                  nodes: Sequence[str] = ("a", "b", "c"), work_seconds: float = 0.0,
                  write_delay: float = 0.0) -> dict[str, list[float]]:
    """Milliseconds per ``invoke`` for each mode on one SQLite file in ``workdir``.

    ``work_seconds`` makes every node take that long (a stand-in for a model call) and
    ``write_delay`` adds that latency to every put / put_writes (a remote database).

    Rounds are interleaved (sync, async, exit, sync, …) so that background noise hits every
    mode alike; each invoke uses a new thread id, so every run starts from an empty thread.
    The first ``warmup`` rounds are not recorded.
    """
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    path = Path(workdir) / f"cost-{time.monotonic_ns()}.sqlite"
    sqlite_saver = open_sqlite_saver(path)
    saver = CountingSaver(sqlite_saver, delay=write_delay) if write_delay else sqlite_saver
    try:
        graph = linear_graph(saver, nodes, work_seconds=work_seconds)
        for round_no in range(warmup + runs):
            for mode in modes:
                config = {"configurable": {"thread_id": f"{mode}-{round_no}"}}
                started = time.perf_counter()
                graph.invoke({"trip": []}, config, durability=mode)
                elapsed = (time.perf_counter() - started) * 1000
                if round_no >= warmup:
                    samples[mode].append(elapsed)
    finally:
        sqlite_saver.conn.close()
    return samples


def summarize_costs(samples: dict[str, Sequence[float]], reference: str = "sync") -> list[dict[str, Any]]:
    """Per mode: number of runs, median ms per invoke, and the median's ratio to ``reference``."""
    medians = {mode: statistics.median(values) for mode, values in samples.items()}
    return [{"mode": mode, "runs": len(samples[mode]), "median ms": round(medians[mode], 2),
             f"ratio to {reference}": round(medians[mode] / medians[reference], 2)} for mode in samples]
