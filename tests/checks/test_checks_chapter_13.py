"""Wrong answers for chapter 13's exercises must fail with a hint (same shape as chapter 00)."""

from langgraph.types import Command

from helpers.checks import PASSED, evaluate

RIGHT_SURVIVES = {"reject": ["A"], "enqueue": ["A", "B", "C"], "interrupt": ["C"], "rollback": ["C"]}
RIGHT_RUNS = {"reject": 1, "enqueue": 3, "interrupt": 3, "rollback": 1}


def survives(**changes):
    return {**RIGHT_SURVIVES, **changes}


def runs(**changes):
    return {**RIGHT_RUNS, **changes}


def seed_body(approved):
    return {"input": {"command": {"resume": "yes" if approved else "no"}}}


def always_yes(approved):
    return {"command": {"resume": "yes"}}


def bare_resume(approved):
    return {"resume": approved}


def command_object(approved):
    return {"command": Command(resume=approved)}


def bool_resume(approved):
    return {"command": {"resume": approved}}


def approve_words(approved):
    return {"command": {"resume": "approve" if approved else "reject"}}


def wrong_key(approved):
    return {"command": {"answer": approved}}


def new_input(approved):
    return {"input": {"approved": approved}}


def trusts_request(tenant, request):
    return {"metadata": {"tenant": tenant, **request}, "limit": 50}


def tenant_from_request(tenant, request):
    meta = {k: request[k] for k in ("trip", "kind") if k in request}
    out = {"metadata": {**meta, "tenant": request.get("tenant", tenant)}, "limit": 50}
    if request.get("status") in ("idle", "busy", "interrupted", "error"):
        out["status"] = request["status"]
    return out


def no_tenant(tenant, request):
    return {"metadata": {k: request[k] for k in ("trip", "kind") if k in request}, "limit": 50}


def request_limit(tenant, request):
    meta = {k: request[k] for k in ("trip", "kind") if k in request}
    out = {"metadata": {**meta, "tenant": tenant}, "limit": request.get("limit", 50)}
    if request.get("status") in ("idle", "busy", "interrupted", "error"):
        out["status"] = request["status"]
    return out


def any_status(tenant, request):
    meta = {k: request[k] for k in ("trip", "kind") if k in request}
    out = {"metadata": {**meta, "tenant": tenant}, "limit": 50}
    if "status" in request:
        out["status"] = request["status"]
    return out


def ignores_status(tenant, request):
    meta = {k: request[k] for k in ("trip", "kind") if k in request}
    return {"metadata": {**meta, "tenant": tenant}, "limit": 50}


def filter_kwarg(tenant, request):
    return {"filter": {"tenant": tenant}, "limit": 50}


WRONG_ANSWERS = {
    "13.1": [
        ((survives(interrupt=["B", "C"]), RIGHT_RUNS), "including B that was still waiting"),
        ((survives(rollback=["A", "C"]), RIGHT_RUNS), "C deletes B"),
        ((survives(reject=["A", "B", "C"]), RIGHT_RUNS), "refused with 409"),
        ((survives(enqueue=["C"]), RIGHT_RUNS), "wait in line"),
        ((RIGHT_SURVIVES, runs(rollback=3)), "deleted (404)"),
        ((RIGHT_SURVIVES, runs(interrupt=1)), "stay listed"),
        ((RIGHT_SURVIVES, runs(reject=3)), "never created"),
        (({"reject": ["A"]}, RIGHT_RUNS), "missing strategies"),
        ((survives(reject="A"), RIGHT_RUNS), "should be a list"),
    ],
    "13.2": [
        ((seed_body,), "article's request"),
        ((always_yes,), "to reject, resume with anything but 'yes'"),
        ((bare_resume,), "no parameter 'resume'"),
        ((command_object,), "not a langgraph Command object"),
        ((bool_resume,), "approves only the string 'yes'"),
        ((approve_words,), "approves only the string 'yes'"),
        ((wrong_key,), "goes under 'resume'"),
        ((new_input,), "nothing resumes the paused node"),
    ],
    "13.3": [
        ((trusts_request,), "copy only 'trip' and 'kind'"),
        ((tenant_from_request,), "must hold 'tenant': tenant_id"),
        ((no_tenant,), "must hold 'tenant'"),
        ((request_limit,), "a request must not choose it"),
        ((any_status,), "is not a thread status"),
        ((ignores_status,), "your search would return"),
        ((filter_kwarg,), "no parameter 'filter'"),
    ],
}


def test_right_answers_pass():
    assert evaluate("13.1", RIGHT_SURVIVES, RIGHT_RUNS).status == PASSED
    assert evaluate("13.2", lambda approved: {"command": {"resume": "yes" if approved else "no"}}).status == PASSED
    # Only "yes" approves (chapter 07's approve node): any other rejection value is right too.
    assert evaluate("13.2", lambda approved: {"command": {"resume": "yes" if approved else False}}).status == PASSED

    def safe(tenant, request):
        meta = {k: request[k] for k in ("trip", "kind") if k in request}
        out = {"metadata": {**meta, "tenant": tenant}, "limit": 50}
        if request.get("status") in ("idle", "busy", "interrupted", "error"):
            out["status"] = request["status"]
        return out

    assert evaluate("13.3", safe).status == PASSED
