"""Reading a submission: is it a notebook, which chapter, which exercise cells it answers."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import nbformat

from .. import layout
from ..learner_copies import make_learner_copy
from ..notebook_format import annotate, exercise_of_check, source
from .results import first_line

MAX_FILE_BYTES = 50 * 2**20  # a notebook bigger than this is not read
CHAPTER_IN_NAME = re.compile(r"(?<![0-9])(\d\d)_")
SLUG = re.compile(r"^\d\d_[A-Za-z0-9_-]+$")


class Invalid(Exception):
    """The submission cannot be graded; the message says why."""


def chapter_solutions(solutions: Path) -> dict[str, Path]:
    """Chapter number -> solution path, e.g. ``{"00": .../00_start_here.ipynb}``."""
    return {p.name[:2]: p for p in layout.chapters(Path(solutions))}


def read_submission(path: Path) -> nbformat.NotebookNode:
    """Parse a submission; :class:`Invalid` says why it is not a gradable notebook."""
    if not path.exists():
        raise Invalid("file not found")
    if path.is_dir():
        raise Invalid("a folder without .ipynb files")
    if not path.is_file():
        raise Invalid("not a regular file")
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise Invalid(f"file is {size // 2**20} MB, larger than the {MAX_FILE_BYTES // 2**20} MB limit")
        raw = path.read_bytes()
    except OSError as exc:
        raise Invalid(f"cannot read the file: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise Invalid(f"not a notebook: the file is not JSON ({first_line(exc)})") from None
    cells = data.get("cells", data.get("worksheets")) if isinstance(data, dict) else None
    if not isinstance(data, dict) or "nbformat" not in data or not isinstance(cells, list):
        raise Invalid("not a notebook: JSON without notebook cells")
    try:
        with warnings.catch_warnings():  # odd but gradable notebooks (no cell ids, ...) are fine
            warnings.simplefilter("ignore")
            nb = nbformat.reads(json.dumps(data), as_version=4)
    except Exception as exc:  # nbformat raises many types for odd documents
        raise Invalid(f"not a notebook: {first_line(exc)}") from None
    if not isinstance(nb.get("cells"), list):
        raise Invalid("not a notebook: JSON without notebook cells")
    for cell in nb.cells:
        if not isinstance(cell, dict) or not isinstance(cell.get("source", ""), (str, list)):
            raise Invalid("not a notebook: a cell is malformed")
        if not isinstance(cell.get("metadata", {}), dict):
            cell["metadata"] = nbformat.NotebookNode()
    return nb


def identify_chapter(nb: Any, filename: str, solutions: Path) -> Path | None:
    """The solution notebook a submission belongs to, or None."""
    known = chapter_solutions(solutions)
    meta = nb.metadata.get("course") if nb is not None and isinstance(nb.get("metadata"), dict) else None
    if isinstance(meta, dict):
        slug = meta.get("slug")
        if isinstance(slug, str) and SLUG.match(slug) and (Path(solutions) / f"{slug}.ipynb").is_file():
            return Path(solutions) / f"{slug}.ipynb"
        number = meta.get("chapter")
        if isinstance(number, str) and number in known:
            return known[number]
    for match in CHAPTER_IN_NAME.finditer(filename):
        if match.group(1) in known:
            return known[match.group(1)]
    return None


def pristine_learner_copy(solution_path: Path) -> nbformat.NotebookNode:
    """The learner notebook exactly as the build generates it, outputs cleared."""
    nb = nbformat.read(solution_path, as_version=4)
    annotate(nb, solution_path.stem)
    return make_learner_copy(nb)


def course_metadata(cell: Any) -> dict[str, Any]:
    """A cell's ``course`` metadata (role, exercise), or ``{}``."""
    meta = cell.get("metadata")
    course = meta.get("course") if isinstance(meta, dict) else None
    return course if isinstance(course, dict) else {}


def exercise_ids(nb: Any) -> list[str]:
    return [e for c in nb.cells for e in [exercise_of_check(c)] if e]


def find_answers(submission: Any, exercises: Sequence[str]) -> tuple[dict[str, str], dict[str, str]]:
    """Exercise id -> the submission's exercise-cell source, and id -> why it is missing."""
    cells = list(submission.cells)
    answers: dict[str, str] = {}
    missing: dict[str, str] = {}
    for ex in exercises:
        tag = ex.replace(".", "-")
        found = [c for c in cells
                 if course_metadata(c).get("role") == "exercise" and course_metadata(c).get("exercise") == ex]
        if not found:
            found = [c for c in cells if c.get("id") == f"exercise-{tag}"]
        if not found:
            found = [cells[i - 1] for i, c in enumerate(cells)
                     if i and exercise_of_check(c) == ex and cells[i - 1].get("cell_type") == "code"]
        code = [c for c in found if c.get("cell_type") == "code"]
        if not found:
            missing[ex] = "exercise cell missing from the submission"
        elif not code:
            missing[ex] = "the exercise cell is no longer a code cell"
        elif not source(code[-1]).strip():
            missing[ex] = "the exercise cell is empty"
        else:
            answers[ex] = source(code[-1])
    return answers, missing
