"""The notebook the grader runs: the pristine learner copy, the submission's answers, and
check cells rewritten to run against a fresh copy of the checks and sign their result."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.checks.protocol import MIME_TYPE

from .. import layout
from ..notebook_format import source
from .reading import course_metadata, exercise_ids, find_answers

CHECKS_DIR = layout.CHECKS
MAX_SOURCE_CHARS = 200_000  # an exercise cell bigger than this is invalid
SIGNATURE_KEY = "lgcourse-grader"  # output metadata key holding the signature

CHECK_TEMPLATE = '''\
# Check cell rewritten by course.grade: the original call below runs against a fresh copy
# of helpers/checks loaded from disk, and its result is signed for the grader.
def _lgcourse_graded_check(_source={source!r}, _key={key!r}, _paths={paths!r}):
    import hashlib, hmac, importlib.util, json, sys, types
    from IPython.display import publish_display_data
    import helpers  # the fresh package sits inside it, so "from ..travel_graphs import" works
    package = "helpers._grading_" + hashlib.sha256(_key.encode()).hexdigest()[:16]
    module = types.ModuleType(package)
    module.__path__ = list(_paths)
    sys.modules[package] = module
    results = []
    try:
        spec = importlib.util.spec_from_file_location(package + ".protocol", _paths[-1] + "/protocol.py")
        protocol = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = protocol
        spec.loader.exec_module(protocol)

        def check(exercise_id, *answers):
            results.append(protocol.evaluate(exercise_id, *answers))

        namespace = dict(globals())
        namespace["check"] = check
        exec(compile(_source, "<check cell>", "exec"), namespace)
    finally:
        for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
            del sys.modules[name]
    for result in results:
        payload = {{"exercise": result.exercise, "status": result.status, "message": result.message}}
        text = json.dumps([payload["exercise"], payload["status"], payload["message"]])
        signature = hmac.new(_key.encode(), text.encode(), "sha256").hexdigest()
        publish_display_data({{"text/plain": result.line, {mime!r}: payload}},
                             metadata={{{sig_key!r}: {{"signature": signature}}}})


_lgcourse_graded_check()
del _lgcourse_graded_check
'''


def sign(key: str, exercise: str, status: str, message: str) -> str:
    text = json.dumps([exercise, status, message])
    return hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest()


def trusted_check_source(original: str, key: str, paths: Sequence[str]) -> str:
    return CHECK_TEMPLATE.format(source=original, key=key, paths=tuple(paths), mime=MIME_TYPE, sig_key=SIGNATURE_KEY)


@dataclass
class Plan:
    """Where each exercise's cells are in the graded notebook, and the check keys."""

    exercises: list[str]
    exercise_cell: dict[str, int]
    check_cell: dict[str, int]
    keys: dict[str, str]
    missing: dict[str, str]


def graded_notebook(pristine: Any, submission: Any, checks_dirs: Sequence[Path] = ()) -> tuple[Any, Plan]:
    """The notebook the grader runs: pristine cells, the submission's exercise answers."""
    nb = copy.deepcopy(pristine)
    exercises = exercise_ids(nb)
    answers, missing = find_answers(submission, exercises)
    for ex, text in answers.items():
        if len(text) > MAX_SOURCE_CHARS:
            missing[ex] = f"invalid: the exercise cell has {len(text)} characters (limit {MAX_SOURCE_CHARS})"
    paths = [str(Path(d).resolve()) for d in checks_dirs] + [str(CHECKS_DIR)]
    plan = Plan(exercises, {}, {}, {}, missing)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        course = course_metadata(cell)
        ex = course.get("exercise")
        if course.get("role") == "exercise" and ex in exercises:
            plan.exercise_cell[ex] = index
            if ex in answers and ex not in missing:
                cell.source = answers[ex]
        elif course.get("role") == "check" and ex in exercises:
            plan.check_cell[ex] = index
            plan.keys[ex] = secrets.token_hex(32)
            cell.source = trusted_check_source(source(cell), plan.keys[ex], paths)
        cell.outputs, cell.execution_count = [], None
    return nb, plan
