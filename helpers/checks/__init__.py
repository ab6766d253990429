"""Exercise checks. Import :func:`check` in a notebook; chapters register checkers.

See :mod:`helpers.checks.protocol` for the protocol the grader relies on.
"""

from .protocol import (
    FAILED,
    MIME_TYPE,
    NOT_ATTEMPTED,
    PASSED,
    CheckResult,
    Fail,
    NotAttempted,
    call_answer,
    check,
    evaluate,
    exercise,
    expect_keys,
    expect_type,
    revealed,
)

__all__ = [
    "FAILED", "MIME_TYPE", "NOT_ATTEMPTED", "PASSED", "CheckResult", "Fail", "NotAttempted",
    "call_answer", "check", "evaluate", "exercise", "expect_keys", "expect_type",
    "revealed",
]
