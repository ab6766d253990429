"""The gated graph waits for its gate file, and only for it; the retried graph's harness
(helpers.appendix_graphs, helpers.worker_faults). tests/helpers/test_multitask.py runs the
retried graph on a real server."""

import asyncio

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from helpers import appendix_graphs, worker_faults
from helpers.appendix_graphs import build_gated_graph, gate_is_open, open_gate


def test_open_gate_creates_the_file(tmp_path):
    assert not gate_is_open(tmp_path)
    open_gate(tmp_path)
    assert gate_is_open(tmp_path)


def test_an_open_gate_lets_the_run_finish_and_record_its_label(tmp_path):
    open_gate(tmp_path)
    graph = build_gated_graph(InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    out = asyncio.run(graph.ainvoke({"gate": str(tmp_path), "label": "first"}, config))
    assert out["done"] == ["first finished"]
    out = asyncio.run(graph.ainvoke({"gate": str(tmp_path), "label": "second"}, config))
    assert out["done"] == ["first finished", "second finished"]  # the reducer appends


def test_the_run_waits_until_the_gate_opens(tmp_path):
    async def scenario():
        graph = build_gated_graph()
        task = asyncio.create_task(graph.ainvoke({"gate": str(tmp_path), "label": "x"}))
        for _ in range(5):
            await asyncio.sleep(appendix_graphs.POLL_SECONDS)
        assert not task.done()  # still waiting: no gate yet
        open_gate(tmp_path)
        return await asyncio.wait_for(task, timeout=10)

    assert asyncio.run(scenario())["done"] == ["x finished"]


def test_a_waiting_run_can_be_cancelled(tmp_path):
    async def scenario():
        task = asyncio.create_task(build_gated_graph().ainvoke({"gate": str(tmp_path)}))
        await asyncio.sleep(appendix_graphs.POLL_SECONDS * 3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())


def test_a_gate_nobody_opens_times_out(tmp_path, monkeypatch):
    monkeypatch.setattr(appendix_graphs, "MAX_WAIT_SECONDS", 0.05)
    with pytest.raises(TimeoutError, match="nobody opened the gate"):
        asyncio.run(build_gated_graph().ainvoke({"gate": str(tmp_path)}))


def test_the_served_graph_has_no_checkpointer():
    assert appendix_graphs.gated_graph.checkpointer is None


def test_note_start_counts_each_node_and_node_starts_reads_them_back(tmp_path):
    log = tmp_path / "starts.log"
    assert worker_faults.node_starts(log) == {}
    assert [worker_faults.note_start(log, n) for n in ("b", "a", "b")] == [1, 1, 2]
    assert worker_faults.node_starts(log) == {"a": 1, "b": 2}


def test_lose_this_worker_cancels_the_task_named_after_the_run():
    async def scenario():
        config = {"configurable": {"run_id": "r-1"}}
        worker = asyncio.create_task(worker_faults.lose_this_worker(config), name="run-r-1-attempt-1")
        with pytest.raises(asyncio.CancelledError):
            await worker
        with pytest.raises(LookupError, match="not on an in-memory Agent Server"):
            await worker_faults.lose_this_worker({"configurable": {"run_id": "other"}})

    asyncio.run(scenario())


def test_the_retried_graph_runs_through_when_no_worker_is_lost(tmp_path):
    log = tmp_path / "starts.log"
    out = asyncio.run(appendix_graphs.build_retried_graph().ainvoke({"log": str(log), "cut_off": 0}))
    assert out["done"] == ["hold_seat", "charge_card"]
    assert worker_faults.node_starts(log) == {"charge_card": 1, "hold_seat": 1}


def test_the_keyed_fare_graph_reads_its_key_from_the_run_context():
    graph = appendix_graphs.build_keyed_fare_graph()
    assert appendix_graphs.keyed_fare_graph.checkpointer is None
    assert graph.invoke({"request": "PEK-SFO"}, context={"api_key": "k"})["quote"] == "PEK-SFO: Air B, 540 EUR"
    assert graph.invoke({"request": "PEK-SFO"})["quote"] == "no API key"
