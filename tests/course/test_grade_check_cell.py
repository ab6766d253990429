"""The grader's check cell: course/grade/graded_check.py, run in process as the kernel runs it.

The tampering tests (test_grade_logic.py, test_grade_failures.py) run the cell in real
kernels; these run the very text the grader writes, in a plain namespace, and read what it
publishes, so they take milliseconds.
"""

from __future__ import annotations

import ast
import inspect
import secrets
from pathlib import Path

import IPython.display
import pytest

from course.grade import graded_check, rewriting, scoring
from course.layout import CHECKS, ROOT
from helpers.checks import MIME_TYPE

FIXTURE_CHECKS = Path(__file__).parent / "fixtures" / "grading" / "checks"  # chapter 98's checks


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """What the cell publishes, as the outputs nbclient would store."""
    outputs: list[dict] = []

    def publish(data, metadata=None, **_):
        outputs.append({"output_type": "display_data", "data": data, "metadata": metadata or {}})

    monkeypatch.setattr(IPython.display, "publish_display_data", publish)
    return outputs


def run_check_cell(original: str, namespace: dict) -> str:
    """Run the check cell the grader makes from ``original`` in ``namespace``; return its key."""
    key = secrets.token_hex(32)
    cell = rewriting.trusted_check_source(original, key, [str(FIXTURE_CHECKS)] + [str(CHECKS)])
    exec(compile(cell, "<check cell>", "exec"), namespace)
    return key


def learner(code: str) -> dict:
    namespace: dict = {"__name__": "__main__"}
    exec(code, namespace)
    return namespace


def test_the_cell_publishes_a_result_the_grader_accepts(published: list[dict]) -> None:
    namespace = learner("answer = 41")
    key = run_check_cell('check("98.1", answer)', namespace)
    assert len(published) == 1 and published[0]["data"]["text/plain"].startswith("[98.1]")
    result = scoring.signed_result(published, key, "98.1")
    assert result is not None and result["status"] == "failed" and "six times seven" in result["message"]
    assert scoring.signed_result(published, "another key", "98.1") is None
    assert published[0]["data"][MIME_TYPE] == result


def test_the_cell_leaves_the_learner_s_names_alone(published: list[dict]) -> None:
    namespace = learner("answer = 42\nsign = 'mine'\ncheck = 'also mine'")
    before = dict(namespace)
    key = run_check_cell('check("98.1", answer)', namespace)
    assert scoring.signed_result(published, key, "98.1")["status"] == "passed"
    assert {k: v for k, v in namespace.items() if k != "__builtins__"} == \
        {k: v for k, v in before.items() if k != "__builtins__"}


def test_a_learner_function_cannot_swap_the_signer(published: list[dict]) -> None:
    namespace = learner("def double(x):\n"
                        "    globals()['_lgcourse_sign'] = lambda *a: 'forged'\n"
                        "    return x * 3\n")
    key = run_check_cell('check("98.2", double)', namespace)
    assert scoring.signed_result(published, key, "98.2")["status"] == "failed"
    assert published[0]["metadata"][rewriting.SIGNATURE_KEY]["signature"] != "forged"


def test_one_signing_function_signs_in_the_kernel_and_verifies_in_the_grader() -> None:
    assert scoring.sign is graded_check.sign is graded_check._lgcourse_sign
    cell = rewriting.trusted_check_source("check('01.1', x)", "k" * 64, [str(CHECKS)])
    assert inspect.getsource(graded_check._lgcourse_sign) in cell
    assert inspect.getsource(graded_check._lgcourse_graded_check) in cell
    # nobody else in the grader computes an HMAC
    others = [p.name for p in (ROOT / "course" / "grade").glob("*.py")
              if "hmac.new" in p.read_text(encoding="utf-8") and p.name != "graded_check.py"]
    assert not others


def test_the_cell_defines_only_its_two_prefixed_names_and_deletes_them() -> None:
    cell = rewriting.trusted_check_source("check('01.1', x)", "k" * 64, [str(CHECKS)])
    tree = ast.parse(cell)
    defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert defined == ["_lgcourse_sign", "_lgcourse_graded_check"]
    assert isinstance(tree.body[-1], ast.Delete)
    assert sorted(t.id for t in tree.body[-1].targets) == sorted(defined)
    # the module the cell is made from imports nothing at its top (the cell runs in the learner's namespace)
    module = ast.parse(Path(graded_check.__file__).read_text(encoding="utf-8"))
    assert not [n for n in module.body if isinstance(n, (ast.Import, ast.ImportFrom))]
