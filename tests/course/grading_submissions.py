"""Submissions for the grader's tests: chapter 00 edited the ways a learner (or a cheat) would.

Chapter 00 has one exercise (00.1: ``kinds = {...}``); ``with_answer`` and ``edit_check``
return an edited copy of a notebook, ``write`` saves it, ``run_cli`` runs the real command.
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
RIGHT = 'kinds = {"visa": "time", "itinerary": "steps", "laptop": "failure"}'
WRONG = 'kinds = {"visa": "steps", "itinerary": "steps", "laptop": "failure"}'
FAKE_PASS = {"exercise": "00.1", "status": "passed", "message": "forged"}


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
