"""helpers.agent_graphs: it serves chapter 07's approval workflow, and its auth handlers draw the tenant boundary.

The handlers are plain async functions, so they are called here directly with the context
the server would pass; chapter 13 shows them working inside a real `langgraph dev` server.
"""

import ast
import asyncio
import inspect
from types import SimpleNamespace

import pytest
from langgraph_sdk import Auth

from helpers import agent_graphs, approval_workflow


def run(coroutine):
    return asyncio.run(coroutine)


def test_the_served_approval_graph_is_chapter_07s_workflow():
    served = agent_graphs.approval_graph
    assert served.builder.state_schema is approval_workflow.TripApproval
    assert served.get_graph().draw_mermaid() == approval_workflow.build_approval_workflow().get_graph().draw_mermaid()
    paused = served.invoke({"request": "PEK-SFO, 1 May"})  # pauses even without a checkpointer
    assert paused["__interrupt__"][0].value == {"action": "approve_booking", "request": "PEK-SFO, 1 May",
                                                "doc_count": 3}


def test_no_second_approval_graph_is_wired_here():
    tree = ast.parse(inspect.getsource(agent_graphs))
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert "StateGraph" not in names and "interrupt" not in names
    assert not [node.name for node in tree.body if isinstance(node, ast.ClassDef)]


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
    update = {"metadata": {"tenant": "globex"}}
    assert run(agent_graphs.own_tenant_only(context(alice, "update"), update)) == {"tenant": "acme"}
    assert update == {"metadata": {"tenant": "acme"}}  # an update cannot move a thread to another tenant
    for action in ("read", "search", "delete", "create_run"):
        untouched = {"metadata": {"tenant": "globex"}}
        assert run(agent_graphs.own_tenant_only(context(alice, action), untouched)) == {"tenant": "acme"}
        assert untouched == {"metadata": {"tenant": "globex"}}  # only create and update write the tenant


def test_users_without_a_tenant_and_uncovered_actions_are_refused():
    studio = {"identity": "langgraph-studio-user"}
    assert run(agent_graphs.own_tenant_only(context(studio, "read"), {})) is False
    assert run(agent_graphs.deny_by_default(context(studio, "create"), {})) is False
    assert run(agent_graphs.read_assistants(context(studio, "read"), {})) is True
