"""From executed cells to verdicts: only signed results of the check cells count."""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from typing import Any

from helpers.checks.protocol import FAILED, MIME_TYPE, NOT_ATTEMPTED, PASSED

from .execution import CellRun
from .graded_check import sign
from .results import ERROR, INVALID, TIMEOUT
from .rewriting import SIGNATURE_KEY, Plan


def signed_result(outputs: Iterable[Any], key: str, exercise: str) -> dict[str, str] | None:
    """The first correctly signed result for ``exercise`` among a check cell's outputs."""
    for out in outputs:
        if out.get("output_type") not in ("display_data", "execute_result"):
            continue
        payload = (out.get("data") or {}).get(MIME_TYPE)
        sig = ((out.get("metadata") or {}).get(SIGNATURE_KEY) or {}).get("signature")
        if not isinstance(payload, dict) or not isinstance(sig, str):
            continue
        fields = [payload.get("exercise"), payload.get("status"), payload.get("message")]
        if not all(isinstance(f, str) for f in fields):
            continue
        if hmac.compare_digest(sign(key, *fields), sig) and fields[0] == exercise \
                and fields[1] in (PASSED, FAILED, NOT_ATTEMPTED):
            return {"exercise": fields[0], "status": fields[1], "message": fields[2]}
    return None


def verdicts(nb: Any, plan: Plan, runs: dict[int, CellRun], timeout: float) -> list[tuple[str, str, str]]:
    """(exercise, status, message) for every exercise of the chapter, in order."""
    out = []
    for ex in plan.exercises:
        ei, ci = plan.exercise_cell.get(ex), plan.check_cell.get(ex)
        e_run = runs.get(ei, CellRun("ok")) if ei is not None else CellRun("ok")
        c_run = runs.get(ci, CellRun("not-run")) if ci is not None else CellRun("not-run")
        if ex in plan.missing and plan.missing[ex].startswith("invalid: "):
            out.append((ex, INVALID, plan.missing[ex][len("invalid: "):]))
            continue
        if e_run.state == "timeout":
            out.append((ex, TIMEOUT,
                        f"the exercise cell ran longer than {timeout:g} s and was stopped (an endless loop?)"))
            continue
        if c_run.state == "timeout":
            out.append((ex, TIMEOUT, f"checking the answer ran longer than {timeout:g} s and was stopped "
                                     "(does your function loop forever?)"))
            continue
        result = signed_result(nb.cells[ci].get("outputs", []), plan.keys[ex], ex) if ci is not None else None
        if result is not None:
            status, message = result["status"], result["message"]
            if ex in plan.missing:
                status, message = NOT_ATTEMPTED, plan.missing[ex]
            elif e_run.state == "error" and status != PASSED:
                message += f" (your exercise cell also raised {e_run.detail})"
            out.append((ex, status, message))
            continue
        if ex in plan.missing:
            out.append((ex, NOT_ATTEMPTED, plan.missing[ex]))
        elif "dead" in (e_run.state, c_run.state):
            out.append((ex, ERROR, "the kernel died while running this exercise (os._exit, a crash, or out of "
                                   "memory?); later exercises were not graded"))
        elif "not-run" in (e_run.state, c_run.state):
            detail = e_run.detail if e_run.state == "not-run" else c_run.detail
            out.append((ex, ERROR, f"not graded: {detail or 'the check cell did not run'}"))
        elif e_run.state == "error":
            out.append((ex, ERROR, f"the exercise cell raised {e_run.detail}"))
        elif c_run.state == "error":
            out.append((ex, ERROR, f"the check raised {c_run.detail}; run the exercise cell and look at its error"))
        else:
            out.append((ex, ERROR, "the check produced no result (was its output suppressed or redirected?)"))
    return out


