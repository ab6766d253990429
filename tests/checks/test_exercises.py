"""Every exercise is checked three ways: passes on solutions, 'not attempted' on learner
copies (read from the stored outputs nbval keeps current), and fails on wrong answers."""

import importlib
import pkgutil
from pathlib import Path

import pytest

from tests.conftest import NOTEBOOKS, SOLUTIONS, read
from helpers.checks import FAILED, MIME_TYPE, NOT_ATTEMPTED, PASSED, evaluate
from helpers.checks.protocol import find_checker

TESTS = Path(__file__).resolve().parent


def check_results(path):
    """exercise id -> list of stored check bundles, from the check cells' outputs."""
    results = {}
    for cell in read(path).cells:
        exercise = cell.metadata.get("course", {}).get("exercise")
        if cell.metadata.get("course", {}).get("role") != "check":
            continue
        bundles = [o["data"][MIME_TYPE] for o in cell.get("outputs", []) if MIME_TYPE in o.get("data", {})]
        results[exercise] = bundles
    return results


def all_wrong_answers():
    cases = {}
    for info in pkgutil.iter_modules([str(TESTS)]):
        if info.name.startswith("test_checks_chapter_"):
            module = importlib.import_module(f"{__package__}.{info.name}")
            for exercise, answers in module.WRONG_ANSWERS.items():
                cases.setdefault(exercise, []).extend(answers)
    return cases


def exercises_of(path):
    return read(path).metadata["course"]["exercises"]


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_each_chapter_has_checked_exercises(path):
    exercises = exercises_of(path)
    minimum = 1 if path.stem.startswith("00") else 3
    assert len(exercises) >= minimum, f"{path.stem} needs at least {minimum} exercises"
    assert len(set(exercises)) == len(exercises)
    assert all(e.startswith(path.stem[:2] + ".") for e in exercises)
    assert all(find_checker(e) is not None for e in exercises)


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_checks_pass_on_solutions(path):
    results = check_results(path)
    assert set(results) == set(exercises_of(path))
    for exercise, bundles in results.items():
        assert [b["status"] for b in bundles] == [PASSED], f"{exercise}: {bundles}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_checks_say_not_attempted_on_learner_copies(path):
    results = check_results(path)
    assert set(results) == set(exercises_of(path))
    for exercise, bundles in results.items():
        assert [b["status"] for b in bundles] == [NOT_ATTEMPTED], f"{exercise}: {bundles}"


WRONG_CASES = [(e, args, hint) for e, cases in sorted(all_wrong_answers().items()) for args, hint in cases]


@pytest.mark.parametrize("exercise_id,args,hint", WRONG_CASES,
                         ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(WRONG_CASES)])
def test_wrong_answer_fails_with_hint(exercise_id, args, hint):
    """Each chapter's WRONG_ANSWERS: a realistic mistake fails, and the hint says what to try."""
    result = evaluate(exercise_id, *args)
    assert result.status == FAILED, result
    assert hint in result.message, result.message


def test_every_exercise_has_wrong_answer_cases():
    cases = all_wrong_answers()
    missing = [e for p in SOLUTIONS for e in exercises_of(p) if not cases.get(e)]
    assert not missing, f"add WRONG_ANSWERS cases in tests/test_checks_chapter_NN.py for {missing}"
