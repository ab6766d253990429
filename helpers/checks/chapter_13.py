"""Checks for chapter 13 (the Agent Server). None of them needs a running server.

13.1's expected outcomes were observed on the pinned langgraph-api / in-memory runtime;
``tests/helpers/test_multitask.py`` re-checks them against a real server, so a version bump
that changes the behaviour fails a test instead of silently grading wrong.
"""

from __future__ import annotations

import json
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from ..approval_workflow import build_approval_workflow
from .protocol import Fail, call_answer, exercise, expect_type

STRATEGIES = ("reject", "enqueue", "interrupt", "rollback")

# -- 13.1 ------------------------------------------------------------------------------

# Run A is running; B, then C arrive with the same strategy (observed, see module docstring).
EXPECTED_SURVIVES = {"reject": ["A"], "enqueue": ["A", "B", "C"], "interrupt": ["C"], "rollback": ["C"]}
EXPECTED_RUNS_LEFT = {"reject": 1, "enqueue": 3, "interrupt": 3, "rollback": 1}
WHY = {
    "reject": "B and C are refused with 409 Conflict while A runs; only A exists and finishes",
    "enqueue": "B and C wait in line and run after A, in order",
    "interrupt": "B stops A; then C stops every unfinished run, including B that was still waiting; only C finishes",
    "rollback": "B deletes A; C deletes B (still waiting) too; only C is left, as if A and B were never sent",
}
RUNS_WHY = {
    "reject": "refused runs are never created",
    "enqueue": "all three ran",
    "interrupt": "interrupted runs stay listed with status 'interrupted'",
    "rollback": "rolled-back runs are deleted (404)",
}


def _check_strategies(answer: Any, what: str) -> None:
    expect_type(answer, dict, what)
    missing = [s for s in STRATEGIES if s not in answer]
    if missing:
        raise Fail(f"{what}: missing strategies {missing}; use the keys {list(STRATEGIES)}")


@exercise("13.1")
def check_three_run_prediction(survives: object, runs_left: object) -> str:
    _check_strategies(survives, "survives")
    _check_strategies(runs_left, "runs_left")
    for strategy in STRATEGIES:
        got = survives[strategy]
        if isinstance(got, str) or not isinstance(got, (list, tuple)):
            raise Fail(f"survives[{strategy!r}] should be a list such as ['A'], got {got!r:.40}")
        if [str(x).upper() for x in got] != EXPECTED_SURVIVES[strategy]:
            raise Fail(f"survives[{strategy!r}] = {list(got)}? {WHY[strategy]}")
    for strategy in STRATEGIES:
        expect_type(runs_left[strategy], int, f"runs_left[{strategy!r}]")
        if runs_left[strategy] != EXPECTED_RUNS_LEFT[strategy]:
            raise Fail(f"runs_left[{strategy!r}] = {runs_left[strategy]}? {RUNS_WHY[strategy]}")
    return "reject keeps A, enqueue runs all three, interrupt and rollback leave only C (rollback also deletes A and B)"


# -- 13.2 ------------------------------------------------------------------------------

RUN_KWARGS = {"input", "command", "config", "context", "metadata", "multitask_strategy", "stream_mode",
              "interrupt_before", "interrupt_after", "checkpoint", "checkpoint_id", "durability", "webhook",
              "on_disconnect", "on_completion", "if_not_exists", "after_seconds", "raise_error", "headers", "params"}


def _apply_locally(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Pause chapter 07's approval workflow locally, then continue it as the server would with ``kwargs``."""
    graph = build_approval_workflow(InMemorySaver())
    config = {"configurable": {"thread_id": "check-12-2"}}
    graph.invoke({"request": "PEK-SFO, 1 May, economy"}, config)
    if "command" in kwargs:
        return graph.invoke(Command(**kwargs["command"]), config)
    return graph.invoke(kwargs.get("input"), config)


@exercise("13.2")
def check_resume_kwargs(resume_kwargs: object) -> str:
    for approved in (True, False):
        kwargs = call_answer(resume_kwargs, approved, what="resume_kwargs(approved)")
        expect_type(kwargs, dict, "keyword arguments for client.runs.wait")
        unknown = sorted(set(kwargs) - RUN_KWARGS)
        if unknown:
            raise Fail(f"client.runs.wait has no parameter {unknown[0]!r}; the resume value goes in "
                       "command={'resume': ...}")
        if isinstance(kwargs.get("input"), dict) and "command" in kwargs["input"]:
            raise Fail("that is the article's request: the server reads a command inside input as new input and "
                       "restarts the workflow; pass command={...} as its own argument")
        if "command" not in kwargs:
            raise Fail("nothing resumes the paused node: pass command={'resume': <decision>}")
        command = kwargs["command"]
        if isinstance(command, Command):
            raise Fail("over HTTP the command is JSON: a dict such as {'resume': 'yes'}, "
                       "not a langgraph Command object")
        expect_type(command, dict, "the command, e.g. {'resume': 'yes'}")
        if "resume" not in command:
            raise Fail(f"the command has keys {sorted(command)}; the value for interrupt() goes under 'resume'")
        if "input" in kwargs and kwargs["input"] is not None:
            raise Fail("send the command alone: an input next to it would be applied as new state")
        try:
            json.dumps(kwargs)
        except (TypeError, ValueError):
            raise Fail("the kwargs must be JSON-serializable: they travel over HTTP") from None
        final = _apply_locally(kwargs)
        if "__interrupt__" in final:
            raise Fail("the workflow is still paused after your request")
        if final.get("approved") is not approved:
            sent = command["resume"]
            if approved:
                raise Fail(f"with approved=True the workflow recorded approved=False: you resumed with {sent!r:.40}, "
                           "but chapter 07's approve node approves only the string 'yes': resume with 'yes'")
            raise Fail(f"with approved=False the workflow recorded approved=True: you resumed with {sent!r:.40}; "
                       "to reject, resume with anything but 'yes', e.g. 'no'")
    return "command={'resume': ...} continues the paused node, for both decisions"


# -- 13.3 ------------------------------------------------------------------------------

SEARCH_KWARGS = {"metadata", "values", "ids", "status", "limit", "offset", "sort_by", "sort_order", "select",
                 "extract"}
THREADS = [  # what a server might hold: metadata and status
    ({"tenant": "acme", "trip": "PEK-SFO", "kind": "booking"}, "interrupted"),
    ({"tenant": "acme", "trip": "PEK-SFO", "kind": "chat"}, "idle"),
    ({"tenant": "acme", "trip": "PEK-LHR", "kind": "booking"}, "idle"),
    ({"tenant": "globex", "trip": "PEK-SFO", "kind": "booking"}, "interrupted"),
    ({"tenant": "globex", "trip": "PEK-LHR", "kind": "chat", "owner": "admin"}, "error"),
]
SEARCH_CASES = [  # (tenant, request, expected thread indexes, what the case is about)
    ("acme", {}, [0, 1, 2], "an empty request"),
    ("acme", {"trip": "PEK-SFO"}, [0, 1], "a trip filter"),
    ("acme", {"trip": "PEK-SFO", "status": "interrupted"}, [0], "a trip and a status"),
    ("acme", {"kind": "booking", "tenant": "globex"}, [0, 2], "a request that names another tenant"),
    ("globex", {"owner": "admin"}, [3, 4], "a request with a key that is not searchable"),
    ("acme", {"status": "deleted"}, [0, 1, 2], "an unknown status"),
    ("globex", {"status": "error", "limit": 100000}, [4], "a request that sets its own limit"),
]


def _search(kwargs: dict[str, Any]) -> list[int]:
    """What threads.search(**kwargs) returns from THREADS (metadata containment, exact status)."""
    metadata, status = kwargs.get("metadata") or {}, kwargs.get("status")
    return [i for i, (meta, st) in enumerate(THREADS)
            if all(meta.get(k) == v for k, v in metadata.items()) and (status is None or st == status)]


@exercise("13.3")
def check_search_kwargs(search_kwargs: object) -> str:
    for tenant, request, expected, about in SEARCH_CASES:
        kwargs = call_answer(search_kwargs, tenant, dict(request), what="search_kwargs(tenant_id, request)")
        expect_type(kwargs, dict, "keyword arguments for client.threads.search")
        unknown = sorted(set(kwargs) - SEARCH_KWARGS)
        if unknown:
            raise Fail(f"client.threads.search has no parameter {unknown[0]!r} (for {about})")
        metadata = kwargs.get("metadata")
        if not isinstance(metadata, dict) or metadata.get("tenant") != tenant:
            raise Fail(f"for {about}, metadata must hold 'tenant': tenant_id (the argument), "
                       f"got metadata={metadata!r:.60}")
        if kwargs.get("limit") != 50:
            raise Fail(f"for {about}, limit should be 50, got {kwargs.get('limit')!r}: a request must not choose it")
        extra = sorted(set(metadata) - {"tenant", "trip", "kind"})
        if extra:
            raise Fail(f"for {about}, the metadata filter carries {extra}: "
                       "copy only 'trip' and 'kind' from the request")
        if "status" in kwargs and kwargs["status"] not in ("idle", "busy", "interrupted", "error"):
            raise Fail(f"for {about}, status={kwargs['status']!r} is not a thread status: leave it out")
        got = _search(kwargs)
        if got != expected:
            raise Fail(f"for {about} ({request}) your search would return threads {got}, expected {expected}")
    return "the tenant always comes from you, only trip/kind/status from the request, limit fixed"
