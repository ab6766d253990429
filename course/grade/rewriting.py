"""The notebook the grader runs: the pristine learner copy, the submission's answers, and
check cells rewritten to run against a fresh copy of the checks and sign their result."""

from __future__ import annotations

import copy
import inspect
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.checks.protocol import MIME_TYPE

from .. import layout
from ..notebook_format import source
from . import graded_check, slicing
from .reading import course_metadata, exercise_ids, find_answers

CHECKS_DIR = layout.CHECKS
MAX_SOURCE_CHARS = 200_000  # an exercise cell bigger than this is invalid
SIGNATURE_KEY = "lgcourse-grader"  # output metadata key holding the signature

CHECK_CELL_HEAD = """\
# Check cell rewritten by course.grade: the original call below runs against a fresh copy
# of helpers/checks loaded from disk, and its result is signed for the grader.
"""
# the functions the cell defines, from their module (course/grade/graded_check.py)
CHECK_CELL_FUNCTIONS = "\n\n".join(inspect.getsource(f) for f in (graded_check._lgcourse_sign,
                                                                    graded_check._lgcourse_graded_check))


def trusted_check_source(original: str, key: str, paths: Sequence[str]) -> str:
    """The check cell the grader runs in place of ``original``: graded_check's functions and one call."""
    call = (f"_lgcourse_graded_check({original!r}, {key!r}, {tuple(paths)!r}, {MIME_TYPE!r}, {SIGNATURE_KEY!r},\n"
            "                       sign=_lgcourse_sign, namespace=globals())\n")
    return f"{CHECK_CELL_HEAD}{CHECK_CELL_FUNCTIONS}\n\n{call}del _lgcourse_graded_check, _lgcourse_sign\n"


@dataclass
class Plan:
    """Where each exercise's cells are in the graded notebook, and the check keys."""

    exercises: list[str]
    exercise_cell: dict[str, int]
    check_cell: dict[str, int]
    keys: dict[str, str]
    missing: dict[str, str]


def graded_notebook(pristine: Any, submission: Any, checks_dirs: Sequence[Path] = (),
                    whole: bool = False) -> tuple[Any, Plan]:
    """The notebook the grader runs: pristine cells, the submission's exercise answers.

    Only the code cells the exercises and checks need are kept (:mod:`.slicing`), unless
    ``whole`` is true or the slice cannot be computed; markdown cells stay.
    """
    nb = copy.deepcopy(pristine)
    exercises = exercise_ids(nb)
    answers, missing = find_answers(submission, exercises)
    for ex, text in answers.items():
        if len(text) > MAX_SOURCE_CHARS:
            missing[ex] = f"invalid: the exercise cell has {len(text)} characters (limit {MAX_SOURCE_CHARS})"
    for cell in nb.cells:
        course = course_metadata(cell)
        ex = course.get("exercise")
        if cell.cell_type == "code" and course.get("role") == "exercise" and ex in answers and ex not in missing:
            cell.source = answers[ex]
    needed = None if whole else slicing.needed_cells(nb.cells)
    if needed is not None:
        nb.cells = [cell for index, cell in enumerate(nb.cells) if cell.cell_type != "code" or index in needed]
    paths = [str(Path(d).resolve()) for d in checks_dirs] + [str(CHECKS_DIR)]
    plan = Plan(exercises, {}, {}, {}, missing)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        course = course_metadata(cell)
        ex = course.get("exercise")
        if course.get("role") == "exercise" and ex in exercises:
            plan.exercise_cell[ex] = index
        elif course.get("role") == "check" and ex in exercises:
            plan.check_cell[ex] = index
            plan.keys[ex] = secrets.token_hex(32)
            cell.source = trusted_check_source(source(cell), plan.keys[ex], paths)
        cell.outputs, cell.execution_count = [], None
    return nb, plan
