"""Every exercise is checked four ways: passes on solutions, 'not attempted' on learner
copies (read from the stored outputs nbval keeps current), fails on wrong answers, and does
not pass on the nearest visible cell pasted as the answer (COPY_ATTACKS)."""

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

from course.notebook_format import source
from helpers.checks import FAILED, MIME_TYPE, NOT_ATTEMPTED, PASSED, evaluate
from helpers.checks.protocol import find_checker
from tests.conftest import NOTEBOOKS, SOLUTIONS, read

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


def copy_attack_modules():
    """chapter number ("06") -> that chapter's ``COPY_ATTACKS`` (``{}`` where it has none yet)."""
    found = {}
    for info in pkgutil.iter_modules([str(TESTS)]):
        if info.name.startswith("test_checks_chapter_"):
            module = importlib.import_module(f"{__package__}.{info.name}")
            found[info.name.removeprefix("test_checks_chapter_")] = getattr(module, "COPY_ATTACKS", {})
    return found


def all_copy_attacks():
    """exercise id -> [(args, what was pasted)], from each chapter's ``COPY_ATTACKS``."""
    cases = {}
    for attacks in copy_attack_modules().values():
        for exercise, entries in attacks.items():
            cases.setdefault(exercise, []).extend(entries)
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


def assert_each_check_stored_once_with(path, status):
    """Every exercise of the notebook has a check cell whose stored output is one bundle of ``status``."""
    results = check_results(path)
    assert set(results) == set(exercises_of(path))
    for exercise, bundles in results.items():
        assert [b["status"] for b in bundles] == [status], f"{exercise}: {bundles}"


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_checks_pass_on_solutions(path):
    assert_each_check_stored_once_with(path, PASSED)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_checks_say_not_attempted_on_learner_copies(path):
    assert_each_check_stored_once_with(path, NOT_ATTEMPTED)


def stub_arguments(path):
    """exercise id -> the arguments its check cell passes, as the learner copy's stub makes them.

    ``answer = ...`` gives Ellipsis; ``def f(...): return ...`` gives a function that
    returns Ellipsis, whatever it is called with.
    """
    cells = read(path).cells
    found = {}
    for index, cell in enumerate(cells):
        exercise = cell.metadata.get("course", {}).get("exercise")
        if cell.metadata.get("course", {}).get("role") != "check":
            continue
        stub = ast.parse(source(cells[index - 1]))
        defined = {}
        for node in stub.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defined[node.name] = lambda *args, **kwargs: ...
            elif isinstance(node, ast.Assign):
                defined.update({t.id: ... for t in node.targets if isinstance(t, ast.Name)})
        call = ast.parse(source(cell)).body[0].value
        names = [a.id for a in call.args[1:]]
        assert all(n in defined for n in names), f"{exercise}: the check passes names the stub does not define"
        found[exercise] = [defined[n] for n in names]
    return found


STUB_CASES = [(e, args) for p in NOTEBOOKS for e, args in sorted(stub_arguments(p).items())]


@pytest.mark.parametrize("exercise_id,args", STUB_CASES, ids=[e for e, _ in STUB_CASES])
def test_the_learner_copys_stub_counts_as_not_attempted(exercise_id, args):
    """The stub a learner starts from (``...`` or a function returning ``...``) is 'not attempted'."""
    assert evaluate(exercise_id, *args).status == NOT_ATTEMPTED


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
    assert not missing, f"add WRONG_ANSWERS cases in tests/checks/test_checks_chapter_NN.py for {missing}"


def test_checkers_share_one_naming_style():
    """A checker is named for what the learner produces: ``check_<thing>``."""
    from helpers.checks.protocol import _REGISTRY

    for path in SOLUTIONS:
        for exercise in exercises_of(path):
            find_checker(exercise)
    odd = sorted(f"{e}: {f.__name__}" for e, f in _REGISTRY.items() if not f.__name__.startswith("check_"))
    assert not odd, f"rename these checkers to check_<what the learner produces>: {odd}"


COPY_CASES = [(e, args, pasted) for e, cases in sorted(all_copy_attacks().items()) for args, pasted in cases]


@pytest.mark.parametrize("exercise_id,args,pasted", COPY_CASES,
                         ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(COPY_CASES)])
def test_pasting_the_nearest_visible_cell_does_not_pass(exercise_id, args, pasted):
    """Each chapter's COPY_ATTACKS: the answer a learner gets by pasting a visible cell (or reading a
    visible table) into the exercise cell must not pass its check."""
    assert isinstance(args, tuple) and isinstance(pasted, str) and pasted.strip(), \
        f"{exercise_id}: a COPY_ATTACKS entry is (args_tuple, 'what was pasted, from which cell')"
    result = evaluate(exercise_id, *args)
    assert result.status != PASSED, f"{exercise_id} passes when the learner pastes {pasted}: {result}"


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_every_exercise_has_a_copy_attack(path):
    """A real requirement (issue 23): every exercise is tried with the nearest visible cell, pasted."""
    cases = all_copy_attacks()
    missing = [e for e in exercises_of(path) if not cases.get(e)]
    assert not missing, (f"add COPY_ATTACKS entries in tests/checks/test_checks_chapter_{path.stem[:2]}.py for "
                         f"{missing}: {{'NN.k': [(args_tuple, \"what was pasted, e.g. cell 'x' of section Y\")]}}")


def test_copy_attacks_name_exercises_of_their_own_chapter():
    """A key that names no exercise would pass vacuously (an unknown id never says 'passed'),
    e.g. after a chapter is renumbered."""
    known = {e for p in SOLUTIONS for e in exercises_of(p)}
    stray = sorted(f"test_checks_chapter_{chapter}.py: {exercise}" for chapter, attacks in copy_attack_modules().items()
                   for exercise in attacks if exercise not in known or not exercise.startswith(chapter + "."))
    assert not stray, f"COPY_ATTACKS keys that are not an exercise of that chapter: {stray}"
