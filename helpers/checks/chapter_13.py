"""Checks for chapter 13 (the Agent Server). None of them needs a running server.

13.1's expected outcomes were observed on the pinned langgraph-api / in-memory runtime;
``tests/helpers/test_multitask.py`` re-checks them against a real server, so a version bump
that changes the behaviour fails a test instead of silently grading wrong. 13.2 hands the
learner's function the config a node gets on that server (see ``_server_config``).
"""

from __future__ import annotations

import json
from typing import Any

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

# The config a node gets on the in-memory Agent Server, reduced to what a key could be built
# from (langgraph_runtime_inmem/ops.py Runs.put writes run_id, thread_id, graph_id and
# assistant_id into configurable; langgraph_api/models/run.py the request id;
# langgraph_api/stream.py metadata["run_attempt"]). A retry by the server is the same run
# record handed out again: the same configurable, a higher run_attempt. A request sent twice
# is two runs (the default multitask strategy is enqueue): new run_id, new request id.
# With an auth handler, Runs.put (langgraph_api/models/run.py) sets langgraph_auth_user_id from
# the token; it is a reserved key a request cannot send (langgraph_api/validation.py). A
# configurable "user_id" is whatever the client put in its request.
THREAD = "01a2335d-9296-7396-9a43-67e70d366129"
ASSISTANT = "b980baeb-4069-5e45-9bfb-28efb4e8e880"
PAY = "3f1c1a52-5d55-4f49-9d0e-6c1d2b7a9e41"       # the command ID the browser made for "Pay"
PAY_AGAIN = "9a7e0c3b-1f4d-4c2e-8b6a-2d5f7e9c1a30"  # a second, genuine payment on the same thread


OTHER_THREAD = "01a2335d-b0c1-7c2e-9d4f-1e6a8b3c5d70"  # another traveller's thread


def _server_config(run_id: str, request_id: str, attempt: int, user: str = "alice",
                   thread: str = THREAD, sent_user_id: str = "alice") -> dict[str, Any]:
    configurable = {"thread_id": thread, "run_id": run_id, "graph_id": "payments", "assistant_id": ASSISTANT,
                    "user_id": sent_user_id, "langgraph_auth_user_id": user, "langgraph_request_id": request_id}
    return {"configurable": configurable,
            "metadata": {**configurable, "run_attempt": attempt, "langgraph_api_version": "0.16.7"}}


def _state(command_id: str) -> dict[str, Any]:
    return {"command_id": command_id, "amount": 540, "currency": "EUR"}


KEY_CASES = {  # name -> (state, config) of one start of charge_card
    "attempt 1": (_state(PAY), _server_config("01a2335d-a256-70db-a96b-d08b8209d0c0", "req-1", 1)),
    "the server's retry": (_state(PAY), _server_config("01a2335d-a256-70db-a96b-d08b8209d0c0", "req-1", 2)),
    "the double-click": (_state(PAY), _server_config("01a2335d-a699-7086-bcb9-2659fea210e1", "req-2", 1)),
    "a new payment": (_state(PAY_AGAIN), _server_config("01a2335d-ab54-7351-8a0c-84620702ccc1", "req-3", 1)),
    # another traveller's browser replays the first traveller's request body: the same command_id and
    # the same configurable user_id; the token, and so langgraph_auth_user_id, is bob's
    "another traveller": (_state(PAY), _server_config("01a2335d-b1d2-7e3f-8a4b-5c6d7e8f9a01", "req-4", 1,
                                                      user="bob", thread=OTHER_THREAD)),
}


@exercise("13.2")
def check_charge_key(charge_key: object) -> str:
    keys = {}
    for name, (state, config) in KEY_CASES.items():
        key = call_answer(charge_key, dict(state), json.loads(json.dumps(config)), what="charge_key(state, config)")
        expect_type(key, str, "the idempotency key")
        keys[name] = key
    if keys["the server's retry"] != keys["attempt 1"]:
        raise Fail("the server's retry of the run (attempt 2) got a new key, so the card would be charged again "
                   "by the same run: metadata['run_attempt'] counts attempts; build the key from something a retry "
                   "keeps")
    if keys["the double-click"] != keys["attempt 1"]:
        raise Fail("the traveller pressed Pay twice: the browser sent the same request again, and with the default "
                   "multitask strategy (enqueue) the server made a second run, with a new run_id and a new request "
                   "id. The key changed, so the card would be charged twice: build it from what the client sends "
                   "again, the command ID in the input")
    if keys["a new payment"] == keys["attempt 1"]:
        raise Fail("a new payment on the same thread (another command_id) got the first payment's key, so the "
                   "provider would answer it with the first charge: the thread is the conversation, not the payment")
    if keys["attempt 1"] == KEY_CASES["attempt 1"][0]["command_id"]:
        raise Fail("the key is the command ID itself, and the command's other effects (the hotel booking) are keyed "
                   "from it too: combine it with the effect's name, e.g. with uuid.uuid5")
    if keys["another traveller"] == keys["attempt 1"]:
        raise Fail("another traveller's browser sent the same command_id (a bug, or a replayed request) and got "
                   "the first traveller's key, so the provider would answer their charge with the first one's: "
                   "a command ID is only unique per sender; scope the key to the user the server authenticated "
                   "(config['configurable']['langgraph_auth_user_id'], which a request cannot set; its 'user_id' "
                   "is what the request sent, here the first traveller's) or to the thread")
    return ("one key per user, command and effect: the same across the server's retry and a double-click, "
            "new for a new payment or another traveller")


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
