"""The check protocol shared by every exercise.

A check cell calls ``check("01.2", answer)``. The call never raises. It shows one line,
``[01.2] passed``, ``[01.2] not attempted yet: ...`` or ``[01.2] failed: <hint>``, and, in
the same output, a machine-readable bundle of MIME type :data:`MIME_TYPE` holding
``{"exercise", "status", "message"}``. The grader reads that bundle from executed notebooks.

A chapter module (``helpers/checks/chapter_01.py``) registers one checker per exercise with
:func:`exercise`. A checker returns a short success message, or raises :class:`Fail` with a
hint that tells the learner what to try next. The stub the learner starts from is ``...``
(Ellipsis): an answer that is, or returns, ``...`` counts as "not attempted yet".

The kernel remembers which exercises :func:`check` has seen pass. A learner copy's cell that
shows an exercise's answer runs only ``if check.revealed("06.1"):`` (the build writes that
line, :mod:`course.learner_copies`): until the check has passed, :func:`revealed` prints one
line saying so, and Run All gives nothing away.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

MIME_TYPE = "application/vnd.lgcourse.check+json"
PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not-attempted"

Checker = Callable[..., "str | None"]
_REGISTRY: dict[str, Checker] = {}
_PASSED_IN_THIS_KERNEL: set[str] = set()
NOT_REVEALED = ("This cell shows the answer to exercise {exercise}: run its check until it passes, "
                "then run this cell again.")


class Fail(Exception):
    """Raised by a checker: the answer is wrong; the message is the hint."""


class NotAttempted(Exception):
    """Raised by a checker when the learner has not replaced the stub yet."""


@dataclass(frozen=True)
class CheckResult:
    exercise: str
    status: str
    message: str

    @property
    def line(self) -> str:
        if self.status == PASSED:
            return f"[{self.exercise}] passed" + (f": {self.message}" if self.message else "")
        if self.status == NOT_ATTEMPTED:
            return f"[{self.exercise}] not attempted yet: {self.message}"
        return f"[{self.exercise}] failed: {self.message}"

    def to_bundle(self) -> dict[str, Any]:
        """The display bundle: a readable line plus the JSON the grader reads."""
        return {"text/plain": self.line, MIME_TYPE: asdict(self)}


def exercise(exercise_id: str) -> Callable[[Checker], Checker]:
    """Register ``func`` as the checker of ``exercise_id`` (e.g. ``"01.2"``)."""

    def register(func: Checker) -> Checker:
        if exercise_id in _REGISTRY and _REGISTRY[exercise_id] is not func:
            raise ValueError(f"exercise {exercise_id} is registered twice")
        _REGISTRY[exercise_id] = func
        return func

    return register


def chapter_module(exercise_id: str) -> str:
    """``"01.2"`` -> ``"helpers.checks.chapter_01"``."""
    return f"{__package__}.chapter_{exercise_id.split('.', 1)[0]}"


def find_checker(exercise_id: str) -> Checker | None:
    if exercise_id not in _REGISTRY:
        try:
            importlib.import_module(chapter_module(exercise_id))
        except ImportError:
            return None
    return _REGISTRY.get(exercise_id)


def is_stub(value: Any) -> bool:
    return value is Ellipsis


def expect_type(value: Any, expected: type | tuple[type, ...], what: str) -> None:
    """Fail with a message naming the expected type, e.g. 'expected an int (the count)'."""
    # bool is an int subclass; an answer of True is never meant as a count.
    if isinstance(value, bool) and expected in (int, (int,)):
        raise Fail(f"expected an int ({what}), got a bool ({value!r})")
    if not isinstance(value, expected):
        names = " or ".join(t.__name__ for t in (expected if isinstance(expected, tuple) else (expected,)))
        raise Fail(f"expected {_article(names)} {names} ({what}), got {type(value).__name__} {_short(value)}")


def expect_keys(answer: Mapping[Any, Any], keys: Iterable[Any], what: str = "key") -> None:
    """Fail naming the keys a dict answer lacks, e.g. "missing scenario(s) ['reload']; the dict needs the keys [...]".

    ``keys`` are listed in the order given; ``what`` names one key for the learner.
    """
    keys = list(keys)
    missing = [k for k in keys if k not in answer]
    if missing:
        raise Fail(f"missing {what}(s) {missing}; the dict needs the keys {keys}")


def call_answer(func: Any, *args: Any, what: str = "your function", case: str | None = None) -> Any:
    """Call a learner's function; a stub body (returns ...) means not attempted.

    With ``case`` (e.g. ``"an ID minted at 2025-03-14"``), an exception raised by the
    function becomes a failure that names the input it failed on.
    """
    if is_stub(func):
        raise NotAttempted("replace the ... with your function")
    if not callable(func):
        raise Fail(f"expected a function ({what}), got {type(func).__name__}")
    try:
        result = func(*args)
    except Exception as exc:
        if case is None:
            raise
        raise Fail(f"your function raised {type(exc).__name__} on {case}: {exc}") from None
    if is_stub(result):
        raise NotAttempted(f"{what} still returns ...: write its body")
    return result


def evaluate(exercise_id: str, *answers: Any) -> CheckResult:
    """Run the checker of ``exercise_id`` on ``answers``; never raises."""
    try:
        checker = find_checker(exercise_id)
        if checker is None:
            return CheckResult(exercise_id, FAILED, f"no check is registered for exercise {exercise_id!r}; "
                               "did the check cell's exercise id get edited?")
        if any(is_stub(a) for a in answers):
            return CheckResult(exercise_id, NOT_ATTEMPTED,
                               "replace each ... in the exercise cell with your answer, run it, then run this cell")
        message = checker(*answers)
        return CheckResult(exercise_id, PASSED, message or "")
    except NotAttempted as exc:
        return CheckResult(exercise_id, NOT_ATTEMPTED, str(exc))
    except Fail as exc:
        return CheckResult(exercise_id, FAILED, str(exc))
    except Exception as exc:  # a learner's answer may raise anything; a check must not
        return CheckResult(exercise_id, FAILED, f"checking your answer raised {type(exc).__name__}: {_short(exc)}; "
                           "run your exercise cell again and look at its error")


def check(exercise_id: str, *answers: Any) -> None:
    """Check an answer and show the result (one line plus the grader's JSON)."""
    result = evaluate(exercise_id, *answers)
    if result.status == PASSED:
        _PASSED_IN_THIS_KERNEL.add(exercise_id)
    try:
        from IPython.display import display

        display(result.to_bundle(), raw=True)
    except Exception:  # outside IPython, or a broken display hook: plain print still informs
        print(result.line)


def revealed(exercise_id: str) -> bool:
    """True once ``check(exercise_id, ...)`` has passed in this kernel (process).

    Otherwise it prints one line, :data:`NOT_REVEALED`, and returns False: a cell written as
    ``if check.revealed("06.1"):`` shows exercise 06.1's answer only after the learner's own
    answer has passed. A later failing attempt does not hide it again. :func:`evaluate` alone
    (the grader, the tests) records nothing.
    """
    if exercise_id in _PASSED_IN_THIS_KERNEL:
        return True
    print(NOT_REVEALED.format(exercise=exercise_id))
    return False


check.revealed = revealed  # type: ignore[attr-defined]  # so a notebook needs only `check`


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value) if not isinstance(value, BaseException) else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
