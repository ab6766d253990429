"""helpers.agent_graphs: the approval workflow runs locally, and the auth handlers draw the tenant boundary.

The handlers are plain async functions, so they are called here directly with the context
the server would pass; chapter 12 shows them working inside a real `langgraph dev` server.
"""

import asyncio
from types import SimpleNamespace

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from langgraph_sdk import Auth

from helpers import agent_graphs


def run(coroutine):
    return asyncio.run(coroutine)


def test_approval_graph_pauses_then_approves_or_rejects():
    for answer, approved in (("yes", True), ("no", False)):
        graph = agent_graphs.build_approval_graph(InMemorySaver())
        config = {"configurable": {"thread_id": answer}}
        paused = graph.invoke({"request": "  Book   PEK-SFO "}, config)
        assert paused["__interrupt__"][0].value == {"question": agent_graphs.APPROVAL_QUESTION,
                                                    "request": "Book PEK-SFO"}
        done = graph.invoke(Command(resume=answer), config)
        assert done["approved"] is approved
        assert (done["result"] is not None) is approved  # analyze runs only when approved


def test_approval_decision_refuses_typos():
    assert agent_graphs.approval_decision({"approved": True}) is True
    assert agent_graphs.approval_decision(" Reject ") is False
    with pytest.raises(ValueError):
        agent_graphs.approval_decision("maybe")


def test_served_graphs_have_no_checkpointer():
    assert agent_graphs.approval_graph.checkpointer is None
    assert agent_graphs.chat_graph.checkpointer is None


def test_authenticate_maps_tokens_to_users_and_refuses_the_rest():
    assert run(agent_graphs.authenticate("Bearer token-alice")) == {"identity": "alice", "tenant": "acme"}
    assert run(agent_graphs.authenticate("bearer token-bob")) == {"identity": "bob", "tenant": "globex"}
    for header in (None, "", "token-alice", "Basic token-alice", "Bearer token-mallory"):
        with pytest.raises(Auth.exceptions.HTTPException) as refused:
            run(agent_graphs.authenticate(header))
        assert refused.value.status_code == 401


def context(user, action):
    return SimpleNamespace(user=user, action=action, resource="threads")


def test_threads_are_stamped_and_filtered_by_the_callers_tenant():
    alice = {"identity": "alice", "tenant": "acme"}
    value = {"metadata": {"tenant": "globex", "trip": "PEK-SFO"}}
    assert run(agent_graphs.own_tenant_only(context(alice, "create"), value)) == {"tenant": "acme"}
    assert value["metadata"] == {"tenant": "acme", "trip": "PEK-SFO"}  # a claimed tenant is overwritten
    for action in ("read", "search", "update", "delete", "create_run"):
        untouched = {"metadata": {"tenant": "globex"}}
        assert run(agent_graphs.own_tenant_only(context(alice, action), untouched)) == {"tenant": "acme"}
        assert untouched == {"metadata": {"tenant": "globex"}}  # only create stamps


def test_users_without_a_tenant_and_uncovered_actions_are_refused():
    studio = {"identity": "langgraph-studio-user"}
    assert run(agent_graphs.own_tenant_only(context(studio, "read"), {})) is False
    assert run(agent_graphs.deny_by_default(context(studio, "create"), {})) is False
    assert run(agent_graphs.read_assistants(context(studio, "read"), {})) is True
