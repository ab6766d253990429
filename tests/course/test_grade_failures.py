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


def test_a_file_that_breaks_the_grader_gets_a_row_and_the_others_are_graded(tmp_path):
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    (solutions / SOLUTION_00.name).write_bytes(SOLUTION_00.read_bytes())
    (solutions / "97_broken.ipynb").write_text("not JSON", encoding="utf-8")  # a damaged course checkout
    broken = write(tmp_path, "97_mine.ipynb", nbformat.v4.new_notebook())
    right = write(tmp_path, "00_right.ipynb", with_answer(learner_00(), RIGHT))
    out_csv = tmp_path / "grades.csv"
    proc = run_cli(broken, right, "--solutions", solutions, "--csv", out_csv, "--jobs", 2)
    assert proc.returncode == 1
    assert "the grader itself failed on 1 file(s)" in proc.stderr and broken in proc.stderr
    with open(out_csv, encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["submission"], r["chapter"], r["exercise"], r["status"]) for r in rows] == [
        (broken, "", "", "error"), (right, "00", "00.1", "passed")]
    assert rows[0]["message"].startswith("internal grader error while building the graded notebook from "
                                         "97_broken.ipynb: NotJSONError: ")


def test_a_submission_that_kills_its_worker_does_not_stop_the_batch(tmp_path):
    """``JPY_PARENT_PID`` is the worker process grading it (the kernel's parent is the worker's
    kernel zygote): killing the worker breaks the pool. That file gets an internal-error row;
    the others are graded again and get theirs."""
    killer = write(tmp_path, "00_killer.ipynb", with_answer(learner_00(), "import os, signal\n"
                                                                       "os.kill(int(os.environ['JPY_PARENT_PID']), "
                                                                       "signal.SIGKILL)"))
    right = write(tmp_path, "00_right.ipynb", with_answer(learner_00(), RIGHT))
    wrong = write(tmp_path, "00_wrong.ipynb", with_answer(learner_00(), WRONG))
    out_csv = tmp_path / "grades.csv"
    with tempfile.TemporaryDirectory(prefix="g-", dir="/tmp") as private_tmp:  # short: the sockets fit inside
        proc = run_cli(killer, right, wrong, "--csv", out_csv, "--jobs", 2, "--timeout", 30,
                       env={**os.environ, "TMPDIR": private_tmp})
        # the orphaned kernels are killed by their zygotes, which end too; the batch folder is gone
        deadline = time.monotonic() + 30
        while left_behind(Path(private_tmp)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert left_behind(Path(private_tmp)) == []
    assert proc.returncode == 1, proc.stderr
    with open(out_csv, encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["submission"], r["status"]) for r in rows] == [(killer, "error"), (right, "passed"), (wrong, "failed")]
    assert rows[0]["message"].startswith("internal grader error while grading it in a worker process: "
                                         "BrokenProcessPool")


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
