"""Unit tests for chapter 14's service parts that need no database, and for its load harness.

The whole service (with PostgreSQL and uvicorn) runs in the chapter itself under nbval.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fastapi import FastAPI
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from helpers import persistent_service, service_load
from helpers.persistent_service import Rendezvous, ServiceContext, ThreadLocks, build_service_graph


def test_thread_locks_serialize_one_thread_and_forget_idle_locks() -> None:
    async def scenario() -> tuple[list[str], dict]:
        locks, order = ThreadLocks(), []

        async def turn(thread: str, name: str, hold: asyncio.Event | None = None) -> None:
            async with locks.hold(thread):
                order.append(f"{name} in")
                if hold is not None:
                    await hold.wait()
                order.append(f"{name} out")

        gate = asyncio.Event()
        first = asyncio.create_task(turn("t", "a", gate))
        await asyncio.sleep(0)
        second = asyncio.create_task(turn("t", "b"))
        other = asyncio.create_task(turn("u", "c"))
        await other  # another thread is not blocked by "a"
        gate.set()
        await asyncio.gather(first, second)
        return order, locks._locks

    order, left = asyncio.run(scenario())
    assert order.index("c out") < order.index("a out") < order.index("b in")
    assert left == {}


def test_rendezvous_waits_for_a_count_and_has_a_deadline() -> None:
    async def scenario() -> None:
        meeting = Rendezvous(deadline=0.2)
        waiter = asyncio.create_task(meeting.wait("arrived", "t", 2))
        await meeting.bump("arrived", "t")
        assert not waiter.done()
        await meeting.bump("arrived", "t")
        await waiter
        with pytest.raises(TimeoutError):
            await meeting.wait("inside", "t", 1)

    asyncio.run(scenario())


def test_the_service_graph_answers_like_chapter_01_and_awaits_hold() -> None:
    async def scenario() -> tuple[list[str], int]:
        graph, held = build_service_graph(InMemorySaver()), []

        async def hold() -> None:
            held.append(1)

        config = {"configurable": {"thread_id": "t"}}
        replies = []
        for text in ("I'd like a window seat, please.", "Where did I say I want to sit?"):
            result = await graph.ainvoke({"messages": [HumanMessage(text)]}, config, context=ServiceContext(hold))
            replies.append(result["messages"][-1].content)
        return replies, len(held)

    assert asyncio.run(scenario()) == (["Noted: a window seat.", "You asked for a window seat."], 2)


def test_the_pool_settings_match_from_conn_string() -> None:
    assert persistent_service.CONNECTION_KWARGS["autocommit"] is True
    assert persistent_service.CONNECTION_KWARGS["prepare_threshold"] == 0
    pool = persistent_service.open_pool("postgresql://nobody@127.0.0.1:1/none", prepare_threshold=None)
    assert pool.kwargs["prepare_threshold"] is None and pool.kwargs["autocommit"] is True
    assert pool.max_size == 4 and pool.closed


def test_percentile_is_nearest_rank() -> None:
    assert service_load.percentile([5, 1, 3, 2, 4], 0.5) == 3
    assert service_load.percentile(list(range(1, 21)), 0.95) == 19
    assert service_load.percentile([7], 0.95) == 7
    with pytest.raises(ValueError):
        service_load.percentile([], 0.5)


def test_measure_load_counts_requests_failures_and_checkpoints() -> None:
    app = FastAPI()
    seen: list[str] = []

    @app.post("/{setup}/threads/{thread_id}/messages")
    async def send(setup: str, thread_id: str) -> dict:
        seen.append(thread_id)
        if thread_id.endswith("-0") and setup == "flaky":
            raise ValueError("boom")
        return {"reply": "ok"}

    async def scenario(setup: str) -> dict:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await service_load.measure_load(client, setup, clients=4, requests=10, prefix="t")

    row = asyncio.run(scenario("pool"))
    assert (row["requests"], row["failures"], row["clients"]) == (10, 0, 4)
    assert len(set(seen)) == 4 and row["checkpoints/s"] > 0 and row["p95 ms"] >= row["median ms"]
    assert asyncio.run(scenario("flaky"))["failures"] == 3  # client 0 sends 3 of the 10 turns (10 = 3+3+2+2)
    with pytest.raises(ValueError):
        asyncio.run(service_load.measure_load(None, "pool", clients=5, requests=4, prefix="t"))


def test_rows_tables_and_the_plot() -> None:
    rows = [{"setup": s, "clients": n, "requests": 8, "failures": 0, "median ms": 1.234 * n, "p95 ms": 2.0 * n,
             "checkpoints/s": 100.0 / n} for s in ("single", "pool") for n in (1, 8)]
    assert service_load.row(rows, "pool", 8)["p95 ms"] == 16.0
    assert service_load.rounded(rows)[0]["median ms"] == 1.2
    assert "CPUs" in service_load.machine()
    import matplotlib

    matplotlib.use("Agg")
    figure = service_load.plot_load(rows)
    assert len(figure.axes) == 2 and len(figure.axes[1].lines) == 2
