"""Submissions for the grader's tests: a chapter edited the ways a learner (or a cheat) would.

Chapter 00 has one exercise (00.1: ``kinds = {...}``); ``with_answer`` and ``edit_check``
return an edited copy of a notebook, ``write`` saves it, ``run_cli`` runs the real command.

The fixture chapter 98 (``chapter_98_solution``: three exercises, a setup cell that imports
only the checks) is for the grader's own logic: its kernels start in a fraction of the
CPU a real chapter's setup needs. Its checks live in ``fixtures/grading/checks/chapter_98.py``;
``grade98`` grades a batch of its submissions in-process (``jobs=1``) or in ``jobs``
worker processes.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import nbformat

from course import grade
from course.layout import ROOT, SOLUTIONS

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "grading"
SOLUTION_00 = SOLUTIONS / "00_start_here.ipynb"
RIGHT = 'kinds = {"laptop": "failure", "visa": "time", "refund": "time", "itinerary": "steps"}'
WRONG = 'kinds = {"laptop": "failure", "visa": "steps", "refund": "time", "itinerary": "steps"}'


def chapter_98_solution():
    cells = [
        nbformat.v4.new_markdown_cell("# 98 · Fixture\n\n**Time:** 5 minutes."),
        nbformat.v4.new_code_cell("from helpers.checks import check"),
        # each exercise as in a real chapter: its prompt, the exercise cell, the check cell
        nbformat.v4.new_markdown_cell("### Exercise 98.1: the answer"),
        nbformat.v4.new_code_cell("### BEGIN SOLUTION\nanswer = 42\n### END SOLUTION"),
        nbformat.v4.new_code_cell('check("98.1", answer)'),
        nbformat.v4.new_markdown_cell("### Exercise 98.2: a function"),
        nbformat.v4.new_code_cell("### BEGIN SOLUTION\ndef double(x):\n    return 2 * x\n### END SOLUTION"),
        nbformat.v4.new_code_cell('check("98.2", double)'),
        nbformat.v4.new_markdown_cell("### Exercise 98.3: a word"),
        nbformat.v4.new_code_cell("### BEGIN SOLUTION\nword = 'ok'\n### END SOLUTION"),
        nbformat.v4.new_code_cell('check("98.3", word)'),
    ]
    return nbformat.v4.new_notebook(cells=cells)


def solutions_98(folder: Path) -> Path:
    """``folder`` holding chapter 98's solution notebook (a stand-in for ``solutions/``)."""
    nbformat.write(chapter_98_solution(), folder / "98_fixture.ipynb")
    return folder


def learner_98(solutions: Path):
    return grade.pristine_learner_copy(solutions / "98_fixture.ipynb")


def grade98(solutions: Path, paths: list[str], timeout: float = 3,
            jobs: int = 1) -> dict[str, dict[str, tuple[str, str]]]:
    """File name -> exercise -> (status, message), graded ``jobs`` at a time with chapter 98's checks."""
    results = grade.grade_paths(paths, timeout=timeout, jobs=jobs, solutions=str(solutions),
                                checks_dirs=[str(FIXTURES / "checks")])
    return {Path(g.submission).name: {r.exercise: (r.status, r.message) for r in g.rows} for g in results}


def learner_00():
    return grade.pristine_learner_copy(SOLUTION_00)


def _with_cell(nb, role: str, text: str, exercise: str):
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        course = cell.metadata.get("course", {})
        if course.get("role") == role and course.get("exercise") == exercise:
            cell.source = text
    return nb


def with_answer(nb, text, exercise="00.1"):
    """A copy of ``nb`` whose exercise cell holds ``text``."""
    return _with_cell(nb, "exercise", text, exercise)


def edit_check(nb, text, exercise="00.1"):
    """A copy of ``nb`` whose check cell holds ``text`` (tampering the grader must undo)."""
    return _with_cell(nb, "check", text, exercise)


def write(folder: Path, name: str, nb) -> str:
    path = folder / name
    nbformat.write(nb, path)
    return str(path)


def run_cli(*args, timeout=600, env=None):
    return subprocess.run([sys.executable, "-m", "course.grade", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, env=env)
