"""The grader on real chapters: solutions pass, learner copies are not attempted.

The grader's own logic (timeouts, dead kernels, tampering, forgeries) is tested on the
fixture chapter 98 in test_grade_logic.py; its command line and its worker processes
(``--jobs 2``) in test_grade_batch.py and test_grade_failures.py.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from course import grade
from tests.course.grading_submissions import ROOT

# Grading every chapter costs as much as nbval itself; `make grade-course` does that. Here a
# sample (chapter 00 is graded in test_grade_batch.py) with functions, graph nodes and a concurrent SQL
# function proves the pristine-restore and signing path on real chapters.
GRADED_IN_TEST_RUN = ("01", "10")


def test_solutions_pass_and_learner_copies_are_not_attempted():
    """Each notebook in a real kernel of its own, graded in this process (``--jobs 1``): the
    worker processes of ``--jobs 2`` would each import the grader and start a kernel zygote
    (about 3 s of CPU each) for what is the same ``grade_file`` of each notebook."""
    paths = [p for folder in ("solutions", "notebooks") for p in sorted((ROOT / folder).glob("[0-9][0-9]_*.ipynb"))
             if p.name[:2] in GRADED_IN_TEST_RUN]
    assert len(paths) == 2 * len(GRADED_IN_TEST_RUN)
    results = grade.grade_paths([str(p) for p in paths], jobs=1)
    assert [g.submission for g in results] == [str(p) for p in paths]
    assert [g.submission for g in results if g.internal_error] == []
    rows = [r for g in results for r in g.rows]
    solution_rows = [r for r in rows if "/solutions/" in r.submission]
    learner_rows = [r for r in rows if "/notebooks/" in r.submission]
    assert solution_rows and learner_rows
    assert [r for r in solution_rows if r.status != "passed"] == []
    assert [r for r in learner_rows if r.status != "not-attempted"] == []
    for path in paths:
        expected = grade.exercise_ids(nbformat.read(path, as_version=4))
        assert [r.exercise for r in rows if Path(r.submission) == path] == expected, path.name
