"""A mixed batch of chapter-01 submissions, as an instructor would meet it (issue 16).

``left_behind`` lists what a grader run left in its private TMPDIR (files, processes).

The submissions are derived from the current chapter files at call time (the pristine
learner copy, the solution's exercise cells, the stubs with ``...`` replaced by ``None``),
so the batch follows the chapter when its exercises change. Each entry says which status
every exercise of that file must get.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

import nbformat
import psutil

from course import grade

SOLUTION_01 = grade.SOLUTIONS / "01_threads.ipynb"
LOOP = "\nwhile True:\n    pass"
STUBBORN_LOOP = "\nimport signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.05)"
EXIT = "\nimport os\nos._exit(1)"


@dataclass
class Submission:
    path: Path
    expected: list[str]  # one status per exercise, in order


def _role(cell) -> str:
    return cell.metadata.get("course", {}).get("role", "")


def _with_answers(nb, answers: dict[str, str]):
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        exercise = cell.metadata.get("course", {}).get("exercise")
        if _role(cell) == "exercise" and exercise in answers:
            cell.source = answers[exercise]
    return nb


def chapter_01_batch(folder: Path, stubborn: bool = False) -> dict[str, Submission]:
    """Write the batch into ``folder``; name -> the file and the statuses it must get.

    ``stubborn`` adds an eleventh file whose first exercise ignores SIGINT, so the grader
    must restart the kernel and replay the earlier cells.
    """
    learner = grade.pristine_learner_copy(SOLUTION_01)
    exercises = grade.exercise_ids(learner)
    right, missing = grade.find_answers(nbformat.read(SOLUTION_01, as_version=4), exercises)
    assert not missing and len(exercises) >= 2, (exercises, missing)
    stubs, _ = grade.find_answers(learner, exercises)
    wrong = {ex: text.replace("...", "None") for ex, text in stubs.items()}
    first, last = exercises[0], exercises[-1]
    n = len(exercises)
    batch: dict[str, Submission] = {}

    def add(name: str, file_name: str, nb, expected: list[str]) -> None:
        path = folder / file_name
        nbformat.write(nb, path)
        batch[name] = Submission(path, expected)

    add("correct", "correct_01_threads.ipynb", _with_answers(learner, right), ["passed"] * n)
    add("blank", "blank_01_threads.ipynb", learner, ["not-attempted"] * n)
    add("wrong", "wrong_01_threads.ipynb", _with_answers(learner, wrong), ["failed"] * n)
    tampered = _with_answers(learner, wrong)
    for cell in tampered.cells:
        if _role(cell) == "check":
            cell.source = f'print("[{cell.metadata["course"]["exercise"]}] passed")'
    add("tampered_check", "tampered_01_threads.ipynb", tampered, ["failed"] * n)
    deleted = _with_answers(learner, right)
    deleted.cells = [c for c in deleted.cells if _role(c) != "check"]
    add("deleted_checks", "no_checks_01_threads.ipynb", deleted, ["passed"] * n)
    add("loop_first", "loop_01_threads.ipynb", _with_answers(learner, {**right, first: right[first] + LOOP}),
        ["timeout"] + ["passed"] * (n - 1))
    add("exit_last", "exit_01_threads.ipynb", _with_answers(learner, {**right, last: right[last] + EXIT}),
        ["passed"] * (n - 1) + ["error"])
    add("unicode_name", "Élève ü 01 copie (2).ipynb", _with_answers(learner, right), ["passed"] * n)
    text_file = folder / "01_threads_notes.ipynb"
    text_file.write_text("my answers: 6, thread_id, the whole list, True\n", encoding="utf-8")
    batch["text_file"] = Submission(text_file, ["invalid"] * n)
    json_file = folder / "01_threads_export.ipynb"
    json_file.write_text(json.dumps({"answers": [6, "thread_id"], "cells": "none"}), encoding="utf-8")
    batch["json_not_notebook"] = Submission(json_file, ["invalid"] * n)
    if stubborn:
        add("stubborn_first", "stubborn_01_threads.ipynb",
            _with_answers(learner, {**right, first: right[first] + STUBBORN_LOOP}), ["timeout"] + ["passed"] * (n - 1))
    return batch


def left_behind(tmp: Path) -> list[str]:
    """Files in the grader's private TMPDIR, and processes that still run with that TMPDIR:
    kernels, their children and worker processes all inherit the environment."""
    found = [f"file {p.name}" for p in tmp.iterdir()]
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("TMPDIR") == str(tmp):
                found.append(f"process {proc.pid}: {' '.join(proc.cmdline())[:160]}")
        except (psutil.Error, OSError):  # gone meanwhile, or not ours to read
            continue
    return found
