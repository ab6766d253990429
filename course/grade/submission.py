"""Grading one submission end to end: read it, build the notebook that runs, run it, score it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import nbformat

from ..layout import SOLUTIONS
from .execution import Step, run_notebook
from .reading import Invalid, exercise_ids, identify_chapter, pristine_learner_copy, read_submission
from .results import DEFAULT_TIMEOUT, INVALID, Graded, Row
from .rewriting import graded_notebook
from .scoring import verdicts


def grade_file(path_text: str, shown: str | None = None, timeout: float = DEFAULT_TIMEOUT,
               solutions: str | None = None, checks_dirs: Sequence[str] = (), keep: str | None = None,
               scratch: str | None = None, whole: bool = False) -> Graded:
    """Grade one submission; never raises (problems become rows). ``scratch``: the folder
    for the kernel's temporary folder (default: the system's temp dir); ``whole``: run every
    code cell of the chapter, not only those the exercises need (:mod:`.slicing`).

    When the grader itself breaks, the file gets one ``error`` row that says so, names the
    step that broke and the exception's first line, and ``internal_error`` is set.
    """
    started = time.perf_counter()
    path = Path(path_text)
    shown = shown if shown is not None else path_text
    solutions_dir = Path(solutions) if solutions else SOLUTIONS
    graded = Graded(shown)
    step = Step("reading the file")
    try:
        try:
            nb = read_submission(path)
        except Invalid as exc:
            step.text = "identifying the chapter"
            solution = identify_chapter(None, path.name, solutions_dir)
            _invalid(graded, solution, str(exc))
            return graded
        step.text = "identifying the chapter"
        solution = identify_chapter(nb, path.name, solutions_dir)
        if solution is None:
            meta = nb.metadata.get("course") if isinstance(nb.metadata.get("course"), dict) else {}
            said = meta.get("slug") or meta.get("chapter")
            hint = f" (its metadata names {said!r})" if said else ""
            _invalid(graded, None, f"unknown chapter{hint}: no course.slug metadata or NN_ file name matches a "
                                   f"chapter in {solutions_dir.name}/")
            return graded
        step.text = f"building the graded notebook from {solution.name}"
        pristine = pristine_learner_copy(solution)
        graded.chapter, graded.title = solution.name[:2], pristine.metadata.get("course", {}).get("title", "")
        run_nb, plan = graded_notebook(pristine, nb, [Path(d) for d in checks_dirs], whole)
        runs = asyncio.run(run_notebook(run_nb, plan, timeout, step, scratch))
        step.text = "reading the check results"
        for ex, status, message in verdicts(run_nb, plan, runs, timeout):
            graded.rows.append(Row(shown, graded.chapter, ex, status, message))
        if keep:
            step.text = f"storing the executed notebook in {keep}"
            _keep(run_nb, Path(keep), path)
    except Exception as exc:  # the grader itself failed: report, mark, keep going
        graded.fail_internally(step.text, exc)
    finally:
        graded.seconds = time.perf_counter() - started
    return graded


def _invalid(graded: Graded, solution: Path | None, message: str) -> None:
    if solution is None:
        graded.rows.append(Row(graded.submission, "", "", INVALID, message))
        return
    nb = nbformat.read(solution, as_version=4)
    graded.chapter = solution.name[:2]
    graded.title = (nb.metadata.get("course") or {}).get("title", "")
    for ex in exercise_ids(nb):
        graded.rows.append(Row(graded.submission, graded.chapter, ex, INVALID, message))
    if not graded.rows:
        graded.rows.append(Row(graded.submission, graded.chapter, "", INVALID, message))


def _keep(nb: Any, folder: Path, path: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / f"{path.stem}.graded.ipynb")
