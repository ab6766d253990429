"""What grading produces: the statuses, one row per exercise, the grading of one file."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from helpers.checks.protocol import FAILED, NOT_ATTEMPTED, PASSED

ERROR, TIMEOUT, INVALID = "error", "timeout", "invalid"
STATUSES = (PASSED, FAILED, NOT_ATTEMPTED, ERROR, TIMEOUT, INVALID)
CSV_COLUMNS = ("submission", "chapter", "exercise", "status", "message")
INTERNAL_ERROR = "internal grader error"

DEFAULT_TIMEOUT = 60


@dataclass
class Row:
    submission: str
    chapter: str
    exercise: str
    status: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {c: getattr(self, c) for c in CSV_COLUMNS}


@dataclass
class Graded:
    """The grading of one submission."""

    submission: str
    chapter: str = ""
    title: str = ""
    rows: list[Row] = field(default_factory=list)
    internal_error: bool = False
    seconds: float = 0.0

    @property
    def passed(self) -> int:
        return sum(r.status == PASSED for r in self.rows)

    @property
    def total(self) -> int:
        return sum(1 for r in self.rows if r.exercise)

    @property
    def score(self) -> str:
        return f"{self.passed}/{self.total}"

    def counts(self) -> dict[str, int]:
        return {s: sum(r.status == s for r in self.rows if r.exercise) for s in STATUSES}

    def fail_internally(self, step: str, exc: BaseException) -> None:
        """Replace the rows by one row that says the grader itself broke, where, and on what."""
        self.internal_error = True
        self.rows = [Row(self.submission, self.chapter, "", ERROR, internal_error_message(step, exc))]


def internal_error_message(step: str, exc: BaseException) -> str:
    """``internal grader error while <step>: <ExceptionType>: <first line of its message>``."""
    return f"{INTERNAL_ERROR} while {step}: {type(exc).__name__}: {first_line(exc)}"


def first_line(value: Any) -> str:
    lines = str(value).strip().splitlines()
    return lines[0] if lines else (type(value).__name__ if isinstance(value, BaseException) else "")
