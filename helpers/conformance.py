"""LangGraph's checkpointer conformance suite, run from a notebook cell or a check.

``langgraph-checkpoint-conformance`` (0.0.2) is the library's own contract for a
``BaseCheckpointSaver``: its ``validate()`` is a coroutine that creates a fresh saver for
each capability, runs that capability's tests against the saver's **async** methods
(``aput``, ``aput_writes``, ``aget_tuple``, ``alist``, ``adelete_thread`` and, when the
class overrides them, ``adelete_for_runs``, ``acopy_thread``, ``aprune``), and returns a
``CapabilityReport``. It needs no network and no server.

:func:`run_suite` runs it from synchronous code (a notebook kernel already runs an event
loop, so ``asyncio.run`` cannot be called there: the suite runs on its own loop in a
worker thread). Every saver gets a fresh empty folder, removed afterwards.
:func:`report_rows` and :func:`print_report` turn the report into a stable table, and
:func:`verdict` into the one-line result a check reports.
"""

from __future__ import annotations

import asyncio
import importlib
import itertools
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import BASE_CAPABILITIES, EXTENDED_CAPABILITIES
from langgraph.checkpoint.conformance.report import CapabilityReport

from . import text_tables

BASE = tuple(sorted(c.value for c in BASE_CAPABILITIES))
EXTENDED = tuple(sorted(c.value for c in EXTENDED_CAPABILITIES))
ALL = BASE + EXTENDED


def run_suite(make_saver: Callable[[Path], BaseCheckpointSaver], capabilities: Iterable[str] | None = None,
              *, name: str | None = None) -> CapabilityReport:
    """Run ``validate()`` on savers made by ``make_saver(empty_folder)``; return its report.

    ``capabilities`` limits the run to those names (default: all eight; an extended one
    whose async method the class does not override is reported as not implemented).
    The report then holds only those names.
    """
    wanted = None if capabilities is None else set(capabilities)
    unknown = sorted((wanted or set()) - set(ALL))
    if unknown:
        raise ValueError(f"unknown capabilities {unknown}; choose from {list(ALL)}")
    with tempfile.TemporaryDirectory(prefix="course-16-suite-") as tmp:
        counter = itertools.count()

        async def factory():
            yield make_saver(Path(tmp, f"saver-{next(counter)}"))

        registered = checkpointer_test(name=name or "saver")(factory)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="conformance") as pool:
            report = pool.submit(asyncio.run, validate(registered, capabilities=wanted)).result()
    if wanted is not None:  # validate() lists the others as "not implemented"; they were not run
        report.results = {cap: result for cap, result in report.results.items() if cap in wanted}
    return report


def report_rows(report: CapabilityReport, capabilities: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """One row per capability: kind (base / extended), result, and the first failing test.

    ``capabilities`` picks the rows (default: all eight). A capability that the run did
    not test reads "not run".
    """
    rows = []
    for cap in capabilities or ALL:
        result = report.results.get(cap)
        if result is None:
            outcome, first = "not run", None
        elif not result.detected:
            outcome, first = "not implemented", None
        elif result.passed:
            outcome, first = f"passed {result.tests_passed}/{result.tests_passed}", None
        else:
            total = result.tests_passed + result.tests_failed
            outcome, first = f"FAILED {result.tests_failed} of {total}", result.failures[0].split(":", 1)[0]
        rows.append({"capability": cap, "kind": "base" if cap in BASE else "extended",
                     "result": outcome, "first failing test": first})
    return rows


def print_report(report: CapabilityReport, capabilities: Iterable[str] | None = None) -> None:
    """The report as a table, then whether all five base capabilities passed (or how many were run)."""
    text_tables.print_table(report_rows(report, capabilities))
    run = [cap for cap in BASE if cap in report.results]
    if len(run) == len(BASE):
        print("all base capabilities passed:", report.passed_all_base())
    else:
        print(f"a partial run: {len(run)} of {len(BASE)} base capabilities")


def verdict(report: CapabilityReport, capabilities: Iterable[str]) -> tuple[bool, str]:
    """``(True, "...")`` when every capability in ``capabilities`` passed, else ``(False, hint)``.

    The hint names the capability, how many of its tests failed, and the first failing
    test with its assertion message (cut to one line).
    """
    for cap in capabilities:
        result = report.results.get(cap)
        if result is None or not result.detected:
            return False, f"the suite found no {cap!r} method of yours to test"
        if not result.passed:
            test, _, message = result.failures[0].partition(": ")
            message = " ".join(message.split())[:160]
            total = result.tests_passed + result.tests_failed
            hint = f"{result.tests_failed} of {total} {cap!r} tests failed; first: {test} ({test_purpose(cap, test)})"
            return False, hint + (f": {message}" if message else "")
    counts = ", ".join(f"{cap} {report.results[cap].tests_passed}/{report.results[cap].tests_passed}"
                       for cap in capabilities)
    return True, f"the conformance suite passes ({counts})"


def test_purpose(capability: str, test: str) -> str:
    """The first line of a conformance test's docstring, e.g. 'All namespaces cleaned.'."""
    module = importlib.import_module(f"langgraph.checkpoint.conformance.spec.test_{capability}")
    doc = getattr(getattr(module, test, None), "__doc__", None) or "no description"
    return doc.strip().splitlines()[0].rstrip(".")


def side_by_side(left: list[str], right: list[str], titles: tuple[str, str] = ("InMemorySaver", "FolderSaver")
                 ) -> None:
    """Two runs' printed lines in two columns, and whether every line is the same."""
    rows = [{"line": i + 1, titles[0]: a, titles[1]: b, "same": "yes" if a == b else "NO"}
            for i, (a, b) in enumerate(itertools.zip_longest(left, right, fillvalue="-"))]
    text_tables.print_table(rows, ["line", titles[0], titles[1], "same"])
    print("identical:", left == right)
