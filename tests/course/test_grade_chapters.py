"""The grader on real chapters: solutions pass, learner copies are not attempted.

The grader's own logic (timeouts, dead kernels, tampering, forgeries) is tested on the
fixture chapter 98 in test_grade_logic.py.
"""

from __future__ import annotations

import csv
from pathlib import Path

import nbformat

from course import grade
from tests.course.grading_submissions import ROOT, run_cli

# Grading every chapter costs as much as nbval itself; `make grade-course` does that. Here a
# sample (chapter 00 is graded in test_grade_batch.py) with functions, graph nodes and a concurrent SQL
# function proves the pristine-restore and signing path on real chapters.
GRADED_IN_TEST_RUN = ("01", "10")


def test_solutions_pass_and_learner_copies_are_not_attempted(tmp_path):
    out_csv = tmp_path / "all.csv"
    paths = [p for folder in ("solutions", "notebooks") for p in sorted((ROOT / folder).glob("[0-9][0-9]_*.ipynb"))
             if p.name[:2] in GRADED_IN_TEST_RUN]
    assert len(paths) == 2 * len(GRADED_IN_TEST_RUN)
    proc = run_cli(*paths, "--csv", out_csv, "--jobs", 2, timeout=1800)
    assert proc.returncode == 0, proc.stderr
    with open(out_csv, encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    solution_rows = [r for r in rows if "/solutions/" in r["submission"]]
    learner_rows = [r for r in rows if "/notebooks/" in r["submission"]]
    assert solution_rows and learner_rows
    assert [r for r in solution_rows if r["status"] != "passed"] == []
    assert [r for r in learner_rows if r["status"] != "not-attempted"] == []
    for path in paths[: len(GRADED_IN_TEST_RUN)]:
        expected = grade.exercise_ids(nbformat.read(path, as_version=4))
        assert [r["exercise"] for r in solution_rows if Path(r["submission"]).name == path.name] == expected
