"""Chapter 14's service: the travel assistant over HTTP (FastAPI) on AsyncPostgresSaver.

Every definition here is shown in a cell of ``solutions/14_persistent_service.ipynb`` first
(``# saved as helpers.persistent_service.X``); uvicorn imports this module, so the saved
code is exactly what the server runs. Serve it with
``helpers.servers.asgi_server("helpers.persistent_service:app", env={DATABASE_URL_ENV: url})``.

Where a model would sit, a deterministic stand-in answers (chapter 01's
``travel_graphs.stand_in_reply``). To make overlapping requests deterministic, a request
may ask its run to *hold* inside the stand-in model until a number of requests on its
thread have arrived, or are inside the model (:class:`Rendezvous`): events, not sleeps.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import psycopg
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

from . import travel_graphs


# shown in solutions/14_persistent_service.ipynb
@dataclass
class ServiceContext:
    """Per-request values for a run; runtime context is never saved in a checkpoint."""

    hold: Callable[[], Awaitable[None]] | None = None  # awaited where a model call would take time


# shown in solutions/14_persistent_service.ipynb
def build_service_graph(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    """Chapter 01's assistant with an async node: START -> reply -> END on MessagesState."""

    async def reply(state: MessagesState, runtime: Runtime[ServiceContext]) -> dict[str, list[AIMessage]]:
        if runtime.context is not None and runtime.context.hold is not None:
            await runtime.context.hold()  # a real model call would be awaited here
        return {"messages": [travel_graphs.stand_in_reply(state["messages"])]}

    builder = StateGraph(MessagesState, context_schema=ServiceContext)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=checkpointer)


# shown in solutions/14_persistent_service.ipynb
CONNECTION_KWARGS = {"autocommit": True, "row_factory": dict_row, "prepare_threshold": 0}


# shown in solutions/14_persistent_service.ipynb
def open_pool(url: str, *, max_size: int = 4, **settings: Any) -> AsyncConnectionPool:
    """A pool for the savers (not yet open: ``async with`` opens and closes it).

    ``check`` tests a connection each time the pool hands it out, so a connection the
    server dropped is replaced instead of failing the request.
    """
    return AsyncConnectionPool(url, min_size=1, max_size=max_size, kwargs={**CONNECTION_KWARGS, **settings},
                               check=AsyncConnectionPool.check_connection, open=False)


# shown in solutions/14_persistent_service.ipynb
class ThreadLocks:
    """One ``asyncio.Lock`` per thread_id, in this process; a lock no request holds or awaits is dropped."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._users: Counter[str] = Counter()

    @asynccontextmanager
    async def hold(self, thread_id: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(thread_id, asyncio.Lock())
        self._users[thread_id] += 1
        try:
            async with lock:
                yield
        finally:
            self._users[thread_id] -= 1
            if not self._users[thread_id]:
                del self._locks[thread_id], self._users[thread_id]


# shown in solutions/14_persistent_service.ipynb
@asynccontextmanager
async def advisory_lock(pool: AsyncConnectionPool, thread_id: str) -> AsyncIterator[None]:
    """Hold PostgreSQL's advisory lock for ``thread_id`` in a transaction on one pool connection.

    Every process that asks for the same key on the same database waits. The lock is released
    when its transaction or its connection ends: if only this connection dies while the run
    goes on, another process can start a second run on the thread, and the error only
    surfaces at commit, when the ``with`` exits.
    """
    key = int.from_bytes(hashlib.sha256(thread_id.encode()).digest()[:8], "big", signed=True)
    async with pool.connection() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (key,))
        yield


# shown in solutions/14_persistent_service.ipynb
class Rendezvous:
    """Per thread: how many requests arrived, how many runs are inside the stand-in model.

    ``await wait(kind, thread_id, count)`` returns once that count is reached (with a
    deadline, so a mistake fails instead of hanging).
    """

    def __init__(self, deadline: float = 30.0) -> None:
        self.counts = {"arrived": Counter(), "inside": Counter()}
        self.changed = asyncio.Condition()
        self.deadline = deadline

    async def bump(self, kind: str, thread_id: str) -> None:
        async with self.changed:
            self.counts[kind][thread_id] += 1
            self.changed.notify_all()

    async def wait(self, kind: str, thread_id: str, count: int) -> None:
        async with asyncio.timeout(self.deadline), self.changed:
            await self.changed.wait_for(lambda: self.counts[kind][thread_id] >= count)


# shown in solutions/14_persistent_service.ipynb
DATABASE_URL_ENV = "SERVICE_DATABASE_URL"


# shown in solutions/14_persistent_service.ipynb
@dataclass
class Service:
    """What the lifespan opened: one graph per set-up, the locks and the lock pool."""

    graphs: dict[str, CompiledStateGraph]
    lock_pool: AsyncConnectionPool
    locks: ThreadLocks = field(default_factory=ThreadLocks)
    rendezvous: Rendezvous = field(default_factory=Rendezvous)

    def serialized(self, setup: str, thread_id: str) -> Any:
        """The per-thread guard of a set-up: none, an asyncio.Lock, or an advisory lock."""
        if setup == "serialized":
            return self.locks.hold(thread_id)
        if setup == "advisory":
            return advisory_lock(self.lock_pool, thread_id)
        return AsyncExitStack()  # nothing to hold


# shown in solutions/14_persistent_service.ipynb
@asynccontextmanager
async def lifespan(application: FastAPI) -> AsyncIterator[None]:
    """Open the savers before the first request; close them after the last one."""
    url = os.environ[DATABASE_URL_ENV]
    async with AsyncExitStack() as stack:
        single = await stack.enter_async_context(AsyncPostgresSaver.from_conn_string(url))
        pool = await stack.enter_async_context(open_pool(url))
        lock_pool = await stack.enter_async_context(open_pool(url))  # locks never starve the saver
        pooled = AsyncPostgresSaver(pool)
        await pooled.setup()
        graphs = {"single": build_service_graph(single), **dict.fromkeys(
            ("pool", "serialized", "advisory"), build_service_graph(pooled))}
        application.state.service = Service(graphs, lock_pool)
        print("lifespan: savers open", flush=True)
        yield
        print("lifespan: closing the pools and the connection", flush=True)
    print("lifespan: closed", flush=True)


# shown in solutions/14_persistent_service.ipynb
class Message(BaseModel):
    """A request body: the user's text; optionally where its run should hold, and its durability mode."""

    text: str
    start_after: int = 0  # wait until this many requests on the thread have arrived, then run
    hold: Literal["arrived", "inside"] | None = None
    count: int = 0
    durability: Literal["sync", "async", "exit"] = "async"  # LangGraph's default (chapter 08)


# shown in solutions/14_persistent_service.ipynb
app = FastAPI(lifespan=lifespan)


# shown in solutions/14_persistent_service.ipynb
Setup = Literal["single", "pool", "serialized", "advisory"]


# shown in solutions/14_persistent_service.ipynb
@app.get("/health")
async def health() -> dict[str, bool]:
    return {"ok": True}


# shown in solutions/14_persistent_service.ipynb
@app.post("/{setup}/threads/{thread_id}/messages")
async def send_message(setup: Setup, thread_id: str, message: Message, request: Request) -> dict[str, Any]:
    """Run one turn of the assistant on ``thread_id`` and return its reply."""
    service: Service = request.app.state.service
    await service.rendezvous.bump("arrived", thread_id)
    if message.start_after:  # two requests that wait for each other here read the thread at once
        await service.rendezvous.wait("arrived", thread_id, message.start_after)

    async def hold() -> None:
        await service.rendezvous.bump("inside", thread_id)
        if message.hold:
            await service.rendezvous.wait(message.hold, thread_id, message.count)

    async with service.serialized(setup, thread_id):
        result = await service.graphs[setup].ainvoke(
            {"messages": [HumanMessage(message.text)]}, {"configurable": {"thread_id": thread_id}},
            context=ServiceContext(hold=hold), durability=message.durability)
    return {"reply": result["messages"][-1].content, "messages": len(result["messages"])}


# shown in solutions/14_persistent_service.ipynb
@app.get("/{setup}/threads/{thread_id}/state")
async def read_state(setup: Setup, thread_id: str, request: Request) -> dict[str, Any]:
    """The thread's latest state: its messages and the nodes that would run next."""
    snapshot = await request.app.state.service.graphs[setup].aget_state({"configurable": {"thread_id": thread_id}})
    return {"messages": [m.content for m in snapshot.values.get("messages", [])], "next": list(snapshot.next)}


# shown in solutions/14_persistent_service.ipynb
@app.get("/threads/{thread_id}/{kind}")
async def wait_until(thread_id: str, kind: Literal["arrived", "inside"], count: int, request: Request) -> dict:
    """Answer once ``count`` requests on the thread have arrived / are inside the stand-in model."""
    await request.app.state.service.rendezvous.wait(kind, thread_id, count)
    return {kind: count}


# shown in solutions/14_persistent_service.ipynb
@app.post("/threads/{thread_id}/knock")
async def knock(thread_id: str, request: Request) -> dict:
    """Count as one more arrival on the thread, without running anything (releases a held run)."""
    await request.app.state.service.rendezvous.bump("arrived", thread_id)
    return {"knocked": thread_id}


# shown in solutions/14_persistent_service.ipynb
@app.exception_handler(psycopg.Error)
async def database_error(request: Request, error: psycopg.Error) -> JSONResponse:
    """A database error becomes a 503 that names it (no traceback leaves the server)."""
    return JSONResponse({"error": type(error).__name__, "detail": str(error).splitlines()[0]}, status_code=503)
