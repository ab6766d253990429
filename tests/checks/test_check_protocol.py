"""The check protocol: one line, a machine-readable bundle, and never an exception."""

import pytest

from helpers.checks import (
    FAILED,
    MIME_TYPE,
    NOT_ATTEMPTED,
    PASSED,
    Fail,
    call_answer,
    check,
    evaluate,
    exercise,
    expect_keys,
    expect_type,
)
from helpers.checks.protocol import _REGISTRY, NotAttempted


@pytest.fixture
def registered():
    @exercise("98.1")
    def count(answer):
        expect_type(answer, int, "the number of messages")
        if answer != 4:
            raise Fail("two turns add two messages each")
        return "4 messages"

    @exercise("98.2")
    def function_answer(func):
        return f"got {call_answer(func, 2, what='double(n)')}"

    yield
    _REGISTRY.pop("98.1"), _REGISTRY.pop("98.2")


def test_statuses(registered):
    assert evaluate("98.1", 4).status == PASSED
    assert evaluate("98.1", ...).status == NOT_ATTEMPTED
    failed = evaluate("98.1", 3)
    assert failed.status == FAILED and "two turns" in failed.line and failed.line.startswith("[98.1] failed: ")


@pytest.mark.parametrize("answer,expected", [("4", "expected an int (the number of messages), got str '4'"),
                                             (True, "expected an int (the number of messages), got a bool"),
                                             (None, "got NoneType")])
def test_wrong_type_names_the_expected_type(registered, answer, expected):
    assert expected in evaluate("98.1", answer).message


def test_expect_keys_names_the_missing_keys_in_the_order_given():
    expect_keys({"a": 1, "b": 2, "other": 3}, ["a", "b"])  # more keys than needed: the checker's business
    with pytest.raises(Fail) as info:
        expect_keys({"b": 2}, {"c": 0, "a": 0, "b": 0}, "scenario")
    assert str(info.value) == "missing scenario(s) ['c', 'a']; the dict needs the keys ['c', 'a', 'b']"


def test_function_answers(registered):
    assert evaluate("98.2", lambda n: 2 * n).status == PASSED
    assert evaluate("98.2", lambda n: ...).status == NOT_ATTEMPTED
    assert evaluate("98.2", ...).status == NOT_ATTEMPTED
    boom = evaluate("98.2", lambda n: 1 / 0)
    assert boom.status == FAILED and "ZeroDivisionError" in boom.message
    assert "expected a function" in evaluate("98.2", 3).message


def test_unknown_exercise_fails_without_raising():
    result = evaluate("97.9", 1)
    assert result.status == FAILED and "no check is registered" in result.message


def test_checker_exception_is_contained(registered):
    class Weird:
        def __eq__(self, other):
            raise RuntimeError("nope")
    assert evaluate("98.1", Weird()).status == FAILED


def test_check_displays_one_bundle(registered, monkeypatch):
    shown = []
    import IPython.display
    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False: shown.append((obj, raw)))
    assert check("98.1", 4) is None
    [(bundle, raw)] = shown
    assert raw and bundle["text/plain"] == "[98.1] passed: 4 messages"
    assert bundle[MIME_TYPE] == {"exercise": "98.1", "status": PASSED, "message": "4 messages"}


def test_check_falls_back_to_print(registered, monkeypatch, capsys):
    import IPython.display

    def broken(*a, **k):
        raise RuntimeError("no display")
    monkeypatch.setattr(IPython.display, "display", broken)
    check("98.1", 3)
    assert capsys.readouterr().out.startswith("[98.1] failed:")


def test_duplicate_registration_is_refused(registered):
    with pytest.raises(ValueError):
        exercise("98.1")(lambda a: None)


def test_not_attempted_from_checker():
    @exercise("98.3")
    def c(a):
        raise NotAttempted("fill in the dict")
    try:
        assert evaluate("98.3", {}).status == NOT_ATTEMPTED
    finally:
        _REGISTRY.pop("98.3")


def test_call_answer_names_the_case_a_function_failed_on():
    @exercise("98.4")
    def c(func):
        return call_answer(func, 0, what="f(x)", case="x = 0")
    try:
        result = evaluate("98.4", lambda x: 1 / x)
        assert result.status == FAILED and "raised ZeroDivisionError on x = 0" in result.message
    finally:
        _REGISTRY.pop("98.4")


def test_revealed_opens_once_the_check_passed_in_this_process(registered, capsys):
    from helpers.checks import revealed
    from helpers.checks.protocol import _PASSED_IN_THIS_KERNEL, NOT_REVEALED

    _PASSED_IN_THIS_KERNEL.discard("98.1")
    assert check.revealed is revealed  # a notebook needs only `check`
    assert revealed("98.1") is False
    assert capsys.readouterr().out == NOT_REVEALED.format(exercise="98.1") + "\n"
    assert "exercise 98.1: run its check until it passes, then run this cell again" in NOT_REVEALED.format(
        exercise="98.1")
    evaluate("98.1", 4)  # the grader's and the tests' evaluate records nothing
    check("98.1", 3)     # nor does a failing check
    assert revealed("98.1") is False
    capsys.readouterr()
    check("98.1", 4)
    assert revealed("98.1") is True and "This cell" not in capsys.readouterr().out
    check("98.1", 3)     # a later wrong attempt does not close it again
    assert revealed("98.1") is True
    _PASSED_IN_THIS_KERNEL.discard("98.1")
