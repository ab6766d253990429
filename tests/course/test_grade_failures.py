"""The grader's own failures (issue 16): a kernel that cannot start, a damaged course
checkout, a submission that kills its worker process, Ctrl-C in the middle of a batch.
Each leaves a row that says what happened, grades the other files, and leaves nothing behind.
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from course import grade
from tests.course.grading_batch import left_behind
from tests.course.grading_submissions import RIGHT, ROOT, SOLUTION_00, WRONG, learner_00, run_cli, with_answer, write


def test_a_kernel_that_cannot_start_is_an_internal_error_row(tmp_path, monkeypatch):
    """What a lost port race looked like (issue 16), forced: the kernel exits at start."""
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "ipykernel_launcher.py").write_text("raise SystemExit(3)\n", encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(fake))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    graded = grade.grade_file(write(tmp_path, "00_sub.ipynb", with_answer(learner_00(), RIGHT)), timeout=30)
    assert graded.internal_error
    [row] = graded.rows
    assert (row.chapter, row.exercise, row.status) == ("00", "", "error")
    assert row.message.startswith("internal grader error while starting the kernel: RuntimeError: Kernel died")
    assert list(scratch.iterdir()) == []


@pytest.fixture(scope="module")
def broken_batch(tmp_path_factory):
    """One ``--jobs 2`` batch through the real command line for the two tests below: a file
    that breaks the grader (a damaged course checkout), a submission that kills its worker
    process, a right and a wrong answer. Each such run starts worker processes that import
    the grader and start a kernel zygote (about 4 s of CPU a run); one run serves both.

    ``JPY_PARENT_PID`` is the worker process grading it (the kernel's parent is the worker's
    kernel zygote): killing the worker breaks the pool, so the files it had not finished are
    graded again, one at a time in a fresh worker, which the killer kills again.
    """
    tmp_path = tmp_path_factory.mktemp("broken batch")
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    (solutions / SOLUTION_00.name).write_bytes(SOLUTION_00.read_bytes())
    (solutions / "97_broken.ipynb").write_text("not JSON", encoding="utf-8")  # a damaged course checkout
    files = {"broken": write(tmp_path, "97_mine.ipynb", nbformat.v4.new_notebook()),
             "killer": write(tmp_path, "00_killer.ipynb", with_answer(learner_00(), "import os, signal\n"
                                                                      "os.kill(int(os.environ['JPY_PARENT_PID']), "
                                                                      "signal.SIGKILL)")),
             "right": write(tmp_path, "00_right.ipynb", with_answer(learner_00(), RIGHT)),
             "wrong": write(tmp_path, "00_wrong.ipynb", with_answer(learner_00(), WRONG))}
    out_csv = tmp_path / "grades.csv"
    with tempfile.TemporaryDirectory(prefix="g-", dir="/tmp") as private_tmp:  # short: the sockets fit inside
        proc = run_cli(*files.values(), "--solutions", solutions, "--csv", out_csv, "--jobs", 2, "--timeout", 30,
                       env={**os.environ, "TMPDIR": private_tmp})
        # the orphaned kernels are killed by their zygotes, which end too; the batch folder is gone
        deadline = time.monotonic() + 30
        while left_behind(Path(private_tmp)) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = left_behind(Path(private_tmp))
    with open(out_csv, encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return {"proc": proc, "files": files, "rows": rows, "left": left}


def _rows_of(batch, *names):
    paths = [batch["files"][name] for name in names]
    return [r for r in batch["rows"] if r["submission"] in paths]


def test_a_file_that_breaks_the_grader_gets_a_row_and_the_others_are_graded(broken_batch):
    proc, broken, right = broken_batch["proc"], broken_batch["files"]["broken"], broken_batch["files"]["right"]
    assert proc.returncode == 1
    # the killer is the other file the grader itself failed on
    assert "the grader itself failed on 2 file(s)" in proc.stderr and broken in proc.stderr
    rows = _rows_of(broken_batch, "broken", "right")
    assert [(r["submission"], r["chapter"], r["exercise"], r["status"]) for r in rows] == [
        (broken, "", "", "error"), (right, "00", "00.1", "passed")]
    assert rows[0]["message"].startswith("internal grader error while building the graded notebook from "
                                         "97_broken.ipynb: NotJSONError: ")


def test_a_submission_that_kills_its_worker_does_not_stop_the_batch(broken_batch):
    """That file gets an internal-error row; the others are graded again and get theirs."""
    proc, files = broken_batch["proc"], broken_batch["files"]
    assert broken_batch["left"] == []
    assert proc.returncode == 1, proc.stderr
    assert files["killer"] in proc.stderr
    rows = broken_batch["rows"]
    assert [(r["submission"], r["status"]) for r in rows] == [
        (files["broken"], "error"), (files["killer"], "error"), (files["right"], "passed"), (files["wrong"], "failed")]
    assert _rows_of(broken_batch, "killer")[0]["message"].startswith(
        "internal grader error while grading it in a worker process: BrokenProcessPool")


# `python -m course.grade` as an instructor's terminal starts it: Ctrl-C raises KeyboardInterrupt.
# A test run started in the background (`make test &`, some CI runners) ignores SIGINT, and
# the grader would inherit that; the grader rightly keeps what it was given, so the test sets it.
AS_IN_A_TERMINAL = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                    "sys.argv[0] = 'course.grade'; runpy.run_module('course.grade', run_name='__main__')")


@pytest.mark.parametrize("jobs", [1, 2])
def test_ctrl_c_stops_the_batch_and_leaves_nothing_behind(tmp_path, jobs):
    """Ctrl-C in the instructor's terminal (SIGINT to the whole process group) while kernels run."""
    started = tmp_path / "started"
    started.mkdir()
    # each loop leaves a file first, so the test knows its kernel is busy without guessing a delay
    loops = [write(tmp_path, f"00_loop{i}.ipynb", with_answer(learner_00(), RIGHT + (
        f"\nopen({str(started / str(i))!r}, 'w').close()\nwhile True:\n    pass"))) for i in range(3)]
    with tempfile.TemporaryDirectory(prefix="g-", dir="/tmp") as private_tmp:
        proc = subprocess.Popen([sys.executable, "-c", AS_IN_A_TERMINAL, *loops, "--jobs", str(jobs)], cwd=ROOT,
                                env={**os.environ, "TMPDIR": private_tmp}, start_new_session=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 300
            while len(list(started.iterdir())) < jobs and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.1)
            assert len(list(started.iterdir())) == jobs, "the loops never started"
            os.killpg(proc.pid, signal.SIGINT)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        assert proc.returncode == 130, err
        assert "interrupted: 0 of 3 file(s) graded" in err
        assert left_behind(Path(private_tmp)) == []
