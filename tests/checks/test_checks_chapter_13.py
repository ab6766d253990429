"""Wrong answers for chapter 13's exercises must fail with a hint; right ones must pass.

Same shape as tests/checks/test_checks_chapter_00.py: ``WRONG_ANSWERS`` maps an exercise id to
``(args, hint)`` cases, where ``args`` is the tuple passed to the check and ``hint`` a
substring the failure message must contain. ``COPY_ATTACKS`` maps an exercise id to
``(args, what was pasted)``: the answer a learner gets by pasting the nearest visible cell,
or by reading a visible table, into the exercise cell. None of them may pass.
"""

import uuid

import pytest

from helpers.checks import PASSED, evaluate
from helpers.ledger import ids

RIGHT_SURVIVES = {"reject": ["A"], "enqueue": ["A", "B", "C"], "interrupt": ["C"], "rollback": ["C"]}
RIGHT_RUNS = {"reject": 1, "enqueue": 3, "interrupt": 3, "rollback": 1}


def survives(**changes):
    return {**RIGHT_SURVIVES, **changes}


def runs(**changes):
    return {**RIGHT_RUNS, **changes}


def run_key(state, config):
    return config["configurable"]["run_id"]


def attempt_key(state, config):
    return f"{state['command_id']}/{config['metadata']['run_attempt']}"


def request_key(state, config):
    return config["configurable"]["langgraph_request_id"]


def thread_key(state, config):
    return str(uuid.uuid5(uuid.UUID(config["configurable"]["thread_id"]), "charge_card"))


def bare_command(state, config):
    return state["command_id"]


def command_and_effect(state, config):
    return str(uuid.uuid5(uuid.UUID(state["command_id"]), "charge_card"))


def sent_user_id(state, config):
    return str(uuid.uuid5(uuid.UUID(state["command_id"]), f"{config['configurable']['user_id']}/charge_card"))


def returns_uuid(state, config):
    return uuid.uuid5(uuid.UUID(state["command_id"]), "charge_card")


def top_level_run_id(state, config):
    return config["run_id"]


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
        ((run_key,), "with a new run_id"),
        ((attempt_key,), "run_attempt"),
        ((request_key,), "new request id"),
        ((thread_key,), "the thread is the conversation"),
        ((bare_command,), "the command ID itself"),
        ((command_and_effect,), "another traveller's browser sent the same command_id"),
        ((sent_user_id,), "which a request cannot set"),
        ((returns_uuid,), "expected a str"),
        ((top_level_run_id,), "raised KeyError"),
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
    assert evaluate("13.2", lambda state, config: str(uuid.uuid5(uuid.UUID(state["command_id"]),
                                                                 f"{config['configurable']['langgraph_auth_user_id']}/charge_card"))
                    ).status == PASSED
    assert evaluate("13.2", lambda state, config: f"{config['configurable']['thread_id']}:{state['command_id']}:"
                                                  "charge_card").status == PASSED

    def safe(tenant, request):
        meta = {k: request[k] for k in ("trip", "kind") if k in request}
        out = {"metadata": {**meta, "tenant": tenant}, "limit": 50}
        if request.get("status") in ("idle", "busy", "interrupted", "error"):
            out["status"] = request["status"]
        return out

    assert evaluate("13.3", safe).status == PASSED


COPY_ATTACKS = {
    "13.1": [
        (({"reject": ["A"], "enqueue": ["A", "B"], "interrupt": ["B"], "rollback": ["B"]},
          {"reject": 1, "enqueue": 2, "interrupt": 2, "rollback": 1}),
         "the two-run table of 'Predict, then run: two runs on one busy thread', read with B as the second run"),
        (({"reject": ["A"], "enqueue": ["A", "B", "C"], "interrupt": ["B", "C"], "rollback": ["B", "C"]},
          {"reject": 1, "enqueue": 3, "interrupt": 3, "rollback": 2}),
         "that table extended run by run: each newcomer stops only the run before it"),
    ],
    "13.2": [
        ((run_key,), "the retry cell: the retried run kept its run_id, so the run_id looks like the key"),
        ((lambda state, config: f"{config['configurable']['thread_id']}/charge_card",),
         "the payment thread of that cell: one thread per payment conversation"),
        ((lambda state, config: ids.stable_id(state["command_id"], "charge_card"),),
         "the saved helper ids.stable_id (chapter 11) on the command ID and the effect's name"),
        ((lambda state, config: ids.run_id_for("acme", state["command_id"]),),
         "the saved helper ids.run_id_for (chapter 11) with the tenant of the chapter's auth handler"),
    ],
    "13.3": [
        ((lambda tenant_id, request: {"metadata": dict(request), "limit": 100},),
         "the search cell of 'Find threads by metadata': the request as the metadata filter, limit=100"),
        ((lambda tenant_id, request: {"metadata": {k: v for k, v in request.items() if k != "status"},
                                       "status": request.get("status"), "limit": 100},),
         "that cell's last row: metadata plus status, limit=100"),
    ],
}


@pytest.mark.parametrize("exercise_id,args,pasted",
                         [(e, args, what) for e, attacks in COPY_ATTACKS.items() for args, what in attacks])
def test_pasting_the_nearest_visible_cell_does_not_pass(exercise_id, args, pasted):
    assert evaluate(exercise_id, *args).status != PASSED, pasted
