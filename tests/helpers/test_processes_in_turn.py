"""helpers.processes.run_pythons_in_turn: children start together but work strictly in turn."""

import time

import pytest

from helpers.processes import ChildProcessError, run_pythons_in_turn

JOB = """
import os, sys, time
path, name, pause = sys.argv[1], sys.argv[2], float(sys.argv[3])
input()  # wait for this job's turn
time.sleep(pause)  # a slow first job: the second must still wait for its exit
seen = open(path).read() if os.path.exists(path) else ""
with open(path, "a") as f:
    f.write(name)
print(f"{name} saw {seen!r} at its turn")
"""


def test_jobs_run_in_turn_and_start_early(tmp_path):
    path = tmp_path / "log.txt"
    started = time.perf_counter()
    first, second, third = run_pythons_in_turn([(JOB, path, "A", 0.3), (JOB, path, "B", 0), (JOB, path, "C", 0)])
    assert (first.lines, second.lines, third.lines) == (["A saw '' at its turn"], ["B saw 'A' at its turn"],
                                                        ["C saw 'AB' at its turn"])
    assert path.read_text() == "ABC"
    assert time.perf_counter() - started < 30


def test_a_failing_job_is_reported_with_its_stderr(tmp_path):
    with pytest.raises(ChildProcessError, match="ZeroDivisionError"):
        run_pythons_in_turn([("input()\n1 / 0", )])
    assert run_pythons_in_turn([("input()\nraise SystemExit(3)",)], expect_returncode=3)[0].returncode == 3
