"""Stress test for issue 16: the grader under load never fails internally.

Twenty consecutive batches of the mixed chapter-01 batch (see ``grading_batch.py``: a correct
copy, a blank copy, wrong answers, a tampered and a deleted check cell, an endless loop, a
loop that ignores SIGINT, ``os._exit``, a unicode name, a text file and a JSON file), each
graded by the real command line with ``--jobs 2`` while a child process spins on every
core. Every batch must exit 0, classify every file as expected and leave nothing behind
(no file in its private TMPDIR, no process that still refers to it).

Marked ``slow``: ``make test`` skips it, ``make test-stress`` runs it (``.ci/run`` does both).
"""

from __future__ import annotations

import csv
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import nbformat
import pytest

from course.layout import ROOT
from tests.course.grading_batch import chapter_01_batch, left_behind

BATCHES = int(os.environ.get("GRADE_STRESS_BATCHES", "20"))
MIN_TIMEOUT = 10  # seconds per cell; the two endless loops pay it in every batch

pytestmark = pytest.mark.slow


@pytest.fixture
def cpu_hog():
    """One child process spinning on each core for the duration of the test."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        yield len(hogs)
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()


def slowest_cell(notebook: Path) -> float:
    """Seconds of the slowest cell of an executed notebook (nbclient records the timing)."""
    times = [c.metadata["execution"] for c in nbformat.read(notebook, as_version=4).cells
             if "shell.execute_reply" in c.get("metadata", {}).get("execution", {})]
    return max(datetime.fromisoformat(t["shell.execute_reply"]).timestamp()
               - datetime.fromisoformat(t["iopub.execute_input"]).timestamp() for t in times)


@pytest.fixture
def grader_tmp():
    """The grader's private TMPDIR, short enough that its kernels' sockets stay inside it."""
    with tempfile.TemporaryDirectory(prefix="grade-stress-", dir="/tmp") as folder:
        yield Path(folder)


def test_twenty_batches_under_a_cpu_hog(tmp_path, cpu_hog, grader_tmp):
    folder = tmp_path / "submissions"
    folder.mkdir()
    batch = chapter_01_batch(folder, stubborn=True)
    tmp = grader_tmp
    env = {**os.environ, "TMPDIR": str(tmp)}
    # The per-cell timeout must stay above the chapter's own slowest cell on this machine
    # under this load (a correct copy that times out is graded right, but not what this
    # test is about), and as low as that allows: the endless loops pay it in every batch.
    warm_up = subprocess.run([sys.executable, "-m", "course.grade", str(batch["correct"].path), "--timeout", "120",
                              "--keep", str(tmp_path / "kept")], cwd=ROOT, env=env, capture_output=True, text=True)
    assert warm_up.returncode == 0, warm_up.stderr
    slowest = slowest_cell(tmp_path / "kept" / f"{batch['correct'].path.stem}.graded.ipynb")
    timeout = max(MIN_TIMEOUT, math.ceil(2 * slowest))
    seconds: list[float] = []
    started = time.monotonic()
    print(f"\n{BATCHES} batches of {len(batch)} chapter-01 submissions, --jobs 2, {cpu_hog} spinning process(es); "
          f"slowest chapter cell {slowest:.1f} s under this load, so --timeout {timeout}", flush=True)
    for number in range(1, BATCHES + 1):
        out = tmp_path / f"grades-{number}.csv"
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "course.grade", *[str(s.path) for s in batch.values()],
                               "--csv", str(out), "--timeout", str(timeout), "--jobs", "2"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
        seconds.append(time.monotonic() - t0)
        with open(out, encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
        internal = [r for r in rows if r["message"].startswith("internal grader error")]
        wrong = {name: [(r["status"], r["message"]) for r in rows if r["submission"] == str(s.path)]
                 for name, s in batch.items()
                 if [r["status"] for r in rows if r["submission"] == str(s.path)] != s.expected}
        leftovers = left_behind(tmp)
        print(f"batch {number:2d}: {seconds[-1]:5.1f} s, exit {proc.returncode}, load {os.getloadavg()[0]:.1f}",
              flush=True)
        details = f"batch {number}: stderr:\n{proc.stderr[-3000:]}"
        assert not internal, f"{details}\ninternal errors: {internal}"
        assert proc.returncode == 0, details
        assert not wrong, f"{details}\nmisclassified: {wrong}"
        assert not leftovers, f"{details}\nleft behind: {leftovers}"
    print(f"{BATCHES} batches in {time.monotonic() - started:.0f} s; per batch median "
          f"{statistics.median(seconds):.1f} s, min {min(seconds):.1f} s, max {max(seconds):.1f} s", flush=True)
