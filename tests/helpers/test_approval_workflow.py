"""The approval workflow of chapter 07, in one process and across two, with and without a checkpointer."""

import json
import os

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from helpers.approval_workflow import (
    NODE_CALLS,
    Outbox,
    build_approval_workflow,
    build_chain,
    build_parallel_approvals,
    outbox,
    run_and_resume,
    send_confirmation,
)
from helpers.preloaded_processes import ProcessServer


def test_approve_and_reject_paths():
    graph = build_approval_workflow(InMemorySaver())
    paused = run_and_resume(graph, "a", {"request": "PEK-SFO, 2 travellers"})
    assert paused["__interrupt__"][0].value == {"action": "approve_booking", "request": "PEK-SFO, 2 travellers",
                                                "doc_count": 3}
    approved = run_and_resume(graph, "b", {"request": "PEK-SFO"}, "yes")
    assert approved["analysis"] == "book Air B at 540 EUR (cheapest of 3)"
    rejected = run_and_resume(graph, "c", {"request": "PEK-CDG"}, "maybe")
    assert rejected["approved"] is False and "analysis" not in rejected
    unknown_route = run_and_resume(graph, "d", {"request": "LHR-JFK"}, "yes")
    assert unknown_route["analysis"] == "book Air Z at 500 EUR (cheapest of 1)"


def test_builds_without_a_checkpointer_and_keeps_json_state():
    """What a server that brings its own persistence needs (chapter 13's Agent Server)."""
    graph = build_approval_workflow()
    assert graph.checkpointer is None
    result = graph.invoke({"request": "PEK-CDG, 1 traveller"})
    state = {k: v for k, v in result.items() if k != "__interrupt__"}
    assert json.loads(json.dumps(state)) == state
    assert json.loads(json.dumps(result["__interrupt__"][0].value))["doc_count"] == 2


@pytest.mark.parametrize("fork", [True, False], ids=["forked-from-the-process-server", "fresh-interpreter"])
def test_started_in_a_child_process_that_exits_resumed_here(tmp_path, fork):
    db, log = str(tmp_path / "w.db"), tmp_path / "process-1.log"
    with ProcessServer(["helpers.approval_workflow"], fork=fork) as server:
        child = server.start("helpers.approval_workflow:start_workflows", db, log=log)
        assert child.pid != os.getpid() and server.wait([child]) == [0]
    lines = log.read_text().splitlines()
    assert [line.split()[0] for line in lines[:4]] == ["booking-101", "booking-102", "booking-103", "booking-104"]
    assert lines[4] == "node calls in the child: {'collect': 4, 'approve': 4}"
    NODE_CALLS.clear()
    with SqliteSaver.from_conn_string(db) as saver:
        graph = build_approval_workflow(saver)
        stamps = {t: saver.get_tuple({"configurable": {"thread_id": t}}).metadata.get("graph_version")
                  for t in ("booking-101", "booking-104")}
        assert stamps == {"booking-101": "approval-v1", "booking-104": None}
        config = {"configurable": {"thread_id": "booking-101"}}
        assert graph.get_state(config).next == ("approve",)
        assert graph.invoke(Command(resume="yes"), config)["analysis"].startswith("book Air B")
    assert dict(NODE_CALLS) == {"approve": 1, "analyze": 1}


def test_parallel_approvals_need_ids():
    graph = build_parallel_approvals(InMemorySaver(), {"approve_fare": {"approver": "x", "amount": 1, "limit": 2}})
    config = {"configurable": {"thread_id": "p"}}
    pending = graph.invoke({"trip": "t"}, config)["__interrupt__"]
    assert sorted(i.value["approver"] for i in pending) == ["manager", "x"]
    with pytest.raises(RuntimeError, match="multiple pending interrupts"):
        graph.invoke(Command(resume="yes"), config)
    final = graph.invoke(Command(resume={i.id: i.value["approver"] for i in pending}), config)
    assert (final["fare_answer"], final["upgrade_answer"]) == ("x", "manager")


def test_build_chain_and_outbox():
    def a(state):
        return {"n": 1}

    with pytest.raises(ValueError, match="at least one node"):
        build_chain(dict, [], None)
    with pytest.raises(ValueError, match="distinct function names"):
        build_chain(dict, [a, a], None)
    assert build_chain(dict, [a], InMemorySaver()).invoke({"n": 0}, {"configurable": {"thread_id": "c"}}) == {"n": 1}
    outbox.clear()
    send_confirmation(540)
    assert outbox.sent == ["booked at 540 EUR"]
    outbox.clear()
    box = Outbox()
    box.send("x")
    assert box.sent == ["x"]
