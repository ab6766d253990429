"""Benchmark: how long each notebook takes, and how much memory its kernel needs.

    python -m course.bench [--repeat 3] [--folder solutions] [CHAPTER ...]
    python -m course.bench --left-open [CHAPTER ...]

For every notebook it reports medians over ``--repeat`` fresh kernels of: kernel start,
the setup (import) cell (both also in CPU seconds of the kernel process, which a loaded
machine does not inflate; kernels are forked from a zygote unless ``COURSE_FORK_KERNELS=0``,
which measures fresh interpreters), the notebook's own work (every other
cell), and the peak memory of the kernel together with every process it started
(PostgreSQL, the Agent Server, child Pythons), sampled with psutil every 0.1 s. Memory is
the proportional set size on Linux (PSS: a page shared by n processes counts 1/n in each,
so the sum is what the processes really take, as a container's limit sees it; a forked
kernel's share of its zygote's pages counts so) and the resident set size elsewhere (RSS:
shared pages count in every process, an upper bound).
Targets: own work <= 2 s, peak <= 250 MB. A full run (no chapters named) also prints the
command ledger's accepted commands per second next to a plain ``INSERT OR IGNORE`` loop on
the same file (``--ledger`` prints only that), chapter 14's load measurement of its
service (``--service`` prints only that: PostgreSQL and uvicorn start, about 150 requests),
and the grader's throughput on every chapter's solution and learner copy, as
``make grade-course`` grades them (``--grader`` prints only that; target >= 1 notebook/s).

``--left-open`` measures a learner who never shuts a kernel down: it runs the chapters one
after the other, each in its own kernel that stays open, and prints the memory of all of
them (kernels and their children) after the last one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import nbformat
import psutil
from nbclient import NotebookClient

from helpers.text_tables import format_table

from .build import select
from .forked_kernels import forking_enabled
from .jupyter_kernels import IpcKernelManager
from .layout import ROOT

OWN_WORK_TARGET_S = 2.0
GRADER_TARGET_FILES_PER_S = 1.0
PEAK_MEMORY_TARGET_MB = 250.0
MEMORY_SAMPLE_INTERVAL_S = 0.1
MB = 1024 * 1024  # "MB" in the tables is MiB


def tree_memory_mb(pid: int) -> float:
    """Memory of process ``pid`` and all its descendants right now, in MiB (0 when gone)."""
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    return sum(process_memory(proc) for proc in processes) / MB


def process_memory(proc: psutil.Process) -> int:
    """Bytes that ``proc`` takes: PSS where the system reports it (Linux), else RSS; 0 when gone."""
    try:
        full = proc.memory_full_info()
        return getattr(full, "pss", full.rss)
    except psutil.AccessDenied:
        pass  # another user's process: its RSS is often still readable
    except psutil.NoSuchProcess:
        return 0
    try:
        return proc.memory_info().rss
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return 0


class PeakMemory:
    """The highest :func:`tree_memory_mb` of ``pid`` seen while the ``with`` block runs."""

    def __init__(self, pid: int, interval: float = MEMORY_SAMPLE_INTERVAL_S) -> None:
        self.pid, self.interval, self.mb = pid, interval, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while True:
            self.mb = max(self.mb, tree_memory_mb(self.pid))
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> PeakMemory:
        # one reading before the thread starts: on a busy machine the thread may first run
        # only after a short-lived child has already exited
        self.mb = tree_memory_mb(self.pid)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.mb = max(self.mb, tree_memory_mb(self.pid))


def _client(nb: nbformat.NotebookNode, path: Path) -> NotebookClient:
    return NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                          kernel_manager_class=IpcKernelManager, resources={"metadata": {"path": str(path.parent)}})


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process ``pid`` has used itself (not its children); 0 when gone."""
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0
    return times.user + times.system


def time_notebook(path: Path) -> dict[str, float]:
    """Execute ``path`` once in a fresh kernel: its phases in seconds (wall, and kernel CPU) and peak MB.

    CPU seconds are the kernel process's own: on a loaded machine they stay what the work
    costs while wall times grow. A kernel forked from a zygote (:mod:`course.forked_kernels`)
    counts from the fork; the zygote's imports, done once per process, are not in it.
    """
    nb = nbformat.read(path, as_version=4)
    client = _client(nb, path)
    started = time.perf_counter()
    with client.setup_kernel():
        kernel_ready = time.perf_counter()
        pid = client.km.provisioner.process.pid
        kernel_cpu = imports_cpu = cpu_seconds(pid)
        setup_done = kernel_ready
        with PeakMemory(pid) as peak:
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)
                if cell.get("metadata", {}).get("course", {}).get("role") == "setup":
                    setup_done, imports_cpu = time.perf_counter(), cpu_seconds(pid)
            finished = time.perf_counter()
    return {"kernel_s": kernel_ready - started, "imports_s": setup_done - kernel_ready,
            "own_work_s": finished - setup_done, "peak_mb": peak.mb,
            "kernel_cpu_s": kernel_cpu, "imports_cpu_s": imports_cpu - kernel_cpu}


def memory_left_open(paths: list[Path]) -> list[dict[str, object]]:
    """Run every notebook in its own kernel and keep them all open; rows of MB per kernel after the last."""
    rows = []
    with ExitStack() as open_kernels:
        pids = []
        for path in paths:
            nb = nbformat.read(path, as_version=4)
            client = _client(nb, path)
            open_kernels.enter_context(client.setup_kernel())
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)
            pids.append((path, client.km.provisioner.process.pid))
        for path, pid in pids:
            rows.append({"notebook": f"{path.parent.name}/{path.name}", "MB after run": f"{tree_memory_mb(pid):.0f}"})
    return rows


def bench_notebooks(paths: list[Path], repeat: int) -> list[dict[str, object]]:
    rows = []
    for path in paths:
        runs = [time_notebook(path) for _ in range(repeat)]
        median = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        within = median["own_work_s"] <= OWN_WORK_TARGET_S and median["peak_mb"] <= PEAK_MEMORY_TARGET_MB
        rows.append({"notebook": f"{path.parent.name}/{path.name}",
                     "kernel s": f"{median['kernel_s']:.2f}", "imports s": f"{median['imports_s']:.2f}",
                     "kernel cpu s": f"{median['kernel_cpu_s']:.2f}", "imports cpu s": f"{median['imports_cpu_s']:.2f}",
                     "own work s": f"{median['own_work_s']:.2f}", "peak MB": f"{median['peak_mb']:.0f}",
                     "max peak MB": f"{max(r['peak_mb'] for r in runs):.0f}", "ok": "yes" if within else "SLOW/BIG",
                     "_total": sum(median[k] for k in ("kernel_s", "imports_s", "own_work_s"))})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="per-notebook timings and kernel memory")
    parser.add_argument("chapters", nargs="*")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--folder", choices=("solutions", "notebooks"), default="solutions")
    parser.add_argument("--ledger", action="store_true", help="only the command ledger's benchmark")
    parser.add_argument("--service", action="store_true", help="only chapter 14's service load measurement")
    parser.add_argument("--grader", action="store_true", help="only the grader's throughput (make grade-course)")
    parser.add_argument("--left-open", action="store_true",
                        help="keep every chapter's kernel open and report their memory together")
    args = parser.parse_args(argv)
    if args.ledger:
        print_ledger_benchmark()
        return 0
    if args.service:
        print_service_benchmark()
        return 0
    if args.grader:
        return print_grader_benchmark()
    if args.left_open:
        rows = memory_left_open(select(args.chapters, ROOT / args.folder))
        print("each chapter run in its own kernel, all kernels left open (kernel + child processes)")
        print(format_table(rows, ["notebook", "MB after run"]))
        print(f"all open kernels together: {sum(float(r['MB after run']) for r in rows):.0f} MB")
        return 0
    rows = bench_notebooks(select(args.chapters, ROOT / args.folder), args.repeat)
    how = "forked from a zygote" if forking_enabled() else "fresh interpreters (COURSE_FORK_KERNELS=0)"
    print(f"medians of {args.repeat} fresh kernels per notebook ({how}); cpu s: the kernel process's own; "
          "peak MB: kernel + its child processes")
    print(format_table(rows, ["notebook", "kernel s", "kernel cpu s", "imports s", "imports cpu s", "own work s",
                              "peak MB", "max peak MB", "ok"]))
    print(f"suite total (sum of medians): {sum(r['_total'] for r in rows):.1f} s")
    if not args.chapters:
        print()
        print_ledger_benchmark()
        print()
        print_service_benchmark()
        print()
        print_grader_benchmark()
    return 0


def print_grader_benchmark() -> int:
    """Files per second of ``make grade-course`` (every chapter, both folders, 2 jobs); 1 if a grade is off."""
    from . import grade

    paths = grade.expand([str(ROOT / "solutions"), str(ROOT / "notebooks")])
    started = time.perf_counter()
    cpu_before = _children_cpu()
    results = grade.grade_paths(paths, jobs=2)
    seconds = time.perf_counter() - started
    cpu = _children_cpu() - cpu_before
    wrong = [f"{g.submission} {r.exercise}: {r.status}" for g in results for r in g.rows
             if r.status != ("passed" if "/solutions/" in g.submission else "not-attempted")]
    rate = len(paths) / seconds
    print(f"grader (make grade-course: {len(paths)} notebooks, 2 jobs, "
          f"{'forked' if forking_enabled() else 'fresh'} kernels): {seconds:.1f} s, {rate:.2f} notebooks/s "
          f"(target >= {GRADER_TARGET_FILES_PER_S:g}: {'yes' if rate >= GRADER_TARGET_FILES_PER_S else 'NO'}), "
          f"{cpu / len(paths):.2f} CPU s per notebook; slowest: "
          + ", ".join(f"{Path(g.submission).name} {g.seconds:.1f} s"
                      for g in sorted(results, key=lambda g: -g.seconds)[:3]))
    for line in wrong:
        print("  unexpected grade:", line)
    return 1 if wrong else 0


def _children_cpu() -> float:
    """CPU seconds of this process's finished children and theirs (the grader's workers and kernels)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def print_ledger_benchmark() -> None:
    """The chapter-10 ledger's accepted/s next to a plain INSERT OR IGNORE loop, as a ratio."""
    import tempfile

    from .ledger_bench import benchmark_ledger, rows_for_table

    with tempfile.TemporaryDirectory(prefix="ledger-bench-") as folder:
        result = benchmark_ledger(folder)
    print(f"command ledger vs plain INSERT OR IGNORE (same SQLite file and settings, WAL, "
          f"synchronous={result['synchronous']}, one commit per row, taking turns; ratio: median of the "
          "repeats, lowest-highest):")
    print(format_table(rows_for_table(result)))


def print_service_benchmark() -> None:
    """Chapter 14's load measurement: the service on PostgreSQL, 1/8/32 clients, three set-ups (one run)."""
    from helpers import service_load

    rows = service_load.benchmark_service()
    print(f"chapter 14's service (uvicorn + PostgreSQL on this machine: {service_load.machine()}), "
          "at least 8 requests per row, one run:")
    print(format_table(service_load.rounded(rows)))


if __name__ == "__main__":
    sys.exit(main())
