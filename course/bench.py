"""Benchmark: how long each notebook takes, and how much memory its kernel needs.

    python -m course.bench [--repeat 3] [--folder solutions] [CHAPTER ...]

For every notebook it reports medians over ``--repeat`` fresh kernels of: kernel start,
the setup (import) cell, the notebook's own work (every other cell), and the kernel's
peak resident memory (VmHWM). Targets: own work <= 2 s, peak <= 250 MB. A full run (no
chapters named) also prints the command ledger's accepted commands per second next to a plain
``INSERT OR IGNORE`` loop on the same file (``--ledger`` prints only that).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from .build import select
from .layout import ROOT
from helpers.text_tables import format_table

OWN_WORK_TARGET_S = 2.0
PEAK_MEMORY_TARGET_MB = 250.0


def peak_memory_mb(pid: int) -> float:
    """Peak resident set size of process ``pid`` (Linux /proc), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def time_notebook(path: Path) -> dict[str, float]:
    """Execute ``path`` once in a fresh kernel; return the phases in seconds and peak MB."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    started = time.perf_counter()
    with client.setup_kernel():
        kernel_ready = time.perf_counter()
        setup_done = kernel_ready
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
            if cell.get("metadata", {}).get("course", {}).get("role") == "setup":
                setup_done = time.perf_counter()
        finished = time.perf_counter()
        peak = peak_memory_mb(client.km.provisioner.process.pid)
    return {"kernel_s": kernel_ready - started, "imports_s": setup_done - kernel_ready,
            "own_work_s": finished - setup_done, "peak_mb": peak}


def bench_notebooks(paths: list[Path], repeat: int) -> list[dict[str, object]]:
    rows = []
    for path in paths:
        runs = [time_notebook(path) for _ in range(repeat)]
        median = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        rows.append({"notebook": f"{path.parent.name}/{path.name}",
                     "kernel s": f"{median['kernel_s']:.2f}", "imports s": f"{median['imports_s']:.2f}",
                     "own work s": f"{median['own_work_s']:.2f}", "peak MB": f"{median['peak_mb']:.0f}",
                     "ok": "yes" if median["own_work_s"] <= OWN_WORK_TARGET_S and median["peak_mb"] <= PEAK_MEMORY_TARGET_MB else "SLOW/BIG",
                     "_total": sum(median[k] for k in ("kernel_s", "imports_s", "own_work_s"))})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="per-notebook timings and kernel memory")
    parser.add_argument("chapters", nargs="*")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--folder", choices=("solutions", "notebooks"), default="solutions")
    parser.add_argument("--ledger", action="store_true", help="only the command ledger's benchmark")
    args = parser.parse_args(argv)
    if args.ledger:
        print_ledger_benchmark()
        return 0
    rows = bench_notebooks(select(args.chapters, ROOT / args.folder), args.repeat)
    print(f"medians of {args.repeat} fresh kernels per notebook")
    print(format_table(rows, ["notebook", "kernel s", "imports s", "own work s", "peak MB", "ok"]))
    print(f"suite total (sum of medians): {sum(r['_total'] for r in rows):.1f} s")
    if not args.chapters:
        print()
        print_ledger_benchmark()
    return 0


def print_ledger_benchmark() -> None:
    """The chapter-10 ledger's accepted/s next to a plain INSERT OR IGNORE loop, as a ratio."""
    import tempfile

    from .ledger_bench import benchmark_ledger, rows_for_table

    with tempfile.TemporaryDirectory(prefix="ledger-bench-") as folder:
        result = benchmark_ledger(folder)
    print(f"command ledger vs plain INSERT OR IGNORE (same SQLite file and settings, WAL, "
          f"synchronous={result['synchronous']}, one commit per row, taking turns):")
    print(format_table(rows_for_table(result)))


if __name__ == "__main__":
    sys.exit(main())
