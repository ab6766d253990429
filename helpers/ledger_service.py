"""The command ledger in front of a real graph: a tiny chat API for chapter 10.

:class:`ChatService` is what an HTTP handler of the travel assistant would do, without
HTTP. ``handle(tenant_id, command_id, conversation_id, payload)``:

1. submits the command to :class:`helpers.ledger.Ledger` (exactly-once acceptance; a
   retry with the same key and payload gets the stored record, another payload raises
   ``PayloadMismatch``; another tenant's conversation raises ``ConversationNotFound``);
2. if this call created the command, dispatches pending commands to :meth:`ChatService.work`,
   the worker, which invokes the graph with the ``thread_id`` the ledger resolved
   server-side and records the answer with ``record_result``;
3. returns a :class:`Response` (status, created, answer): never a raw id.

Payloads are ``{"kind": "message", "message_id": ..., "text": ...}`` (a new user message,
sent as a ``HumanMessage`` with that id) or ``{"kind": "regenerate"}`` (fork from the
checkpoint before the last answer, as in chapter 09, and let the reply node run again).

The worker is an **idempotent receiver**. Every checkpoint a run writes carries the
command's ``run_id`` in its metadata (``configurable["ledger_run_id"]`` is copied there by
LangGraph). Before running, the worker looks for that tag: a finished run is not run again,
its answer is read back from the checkpoint; an unfinished one is resumed with
``invoke(None, ...)``. This needs per-thread FIFO (the ledger's) so that the run's last
checkpoint is the thread's head, and leases so that two workers do not get the same
delivery at once. ``dedupe=False`` turns the check off to show what at-least-once
delivery does without it.

Limits: only the request that created a command dispatches it, so a command whose worker
raised stays ``accepted`` until the next :meth:`ChatService.dispatch` sweep (a restart runs
one); a real service would also sweep on a timer.

``calls`` is a :class:`collections.Counter` that outlives a simulated crash (think of the
model provider's bill): ``calls["reply"]`` counts reply-node runs, ``calls["deliveries"]``
deliveries, ``calls["deduplicated"]`` deliveries the receiver recognised as done.
The reply node is a deterministic stand-in for a model (``helpers.travel_graphs``) that
appends its call number, ``(reply #n)``, so that two runs are told apart.

Also here: :func:`run_together` (start N threads at once with a barrier),
:func:`table_counts` (row counts of a SQLite file), :func:`status_counts` (commands per
status, pending outbox rows), :func:`crash_then_restart` (one crash point, a restart,
the counts that matter) and :func:`crash_table` (many points in one directory).
"""

from __future__ import annotations

import sqlite3
import tempfile
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, MessagesState, StateGraph

from helpers.ledger import Delivery, Ledger, SimulatedCrash
from helpers.travel_graphs import stand_in_reply

__all__ = ["ChatService", "Response", "build_counting_chat_graph", "crash_table", "crash_then_restart",
           "run_together", "status_counts", "table_counts"]

RUN_TAG = "ledger_run_id"  # configurable key; LangGraph copies it into checkpoint metadata


@dataclass(frozen=True)
class Response:
    """What the API returns to the client."""

    status: str  # accepted / running / done / failed
    created: bool  # this request created the command (False for a retry)
    answer: str | None


def build_counting_chat_graph(checkpointer: Any, calls: Counter):
    """START -> reply -> END; reply is the stand-in model and counts ``calls["reply"]``."""
    lock = threading.Lock()

    def reply(state: MessagesState) -> dict[str, Any]:
        with lock:
            calls["reply"] += 1
            n = calls["reply"]
        text = stand_in_reply(state["messages"]).content
        return {"messages": [AIMessage(content=f"{text} (reply #{n})")]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=checkpointer)


class ChatService:
    """Ledger + SqliteSaver + graph in ``directory`` (files ledger.db and checkpoints.db).

    The ledger runs with ``synchronous="NORMAL"`` unless told otherwise (see __init__).
    """

    def __init__(self, directory: str | Path, *, crash_at: str | None = None,
                 calls: Counter | None = None, dedupe: bool = True, synchronous: str = "NORMAL") -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.calls = calls if calls is not None else Counter()
        self.dedupe, self.synchronous = dedupe, synchronous
        # NORMAL (in WAL mode): a commit survives a crash of the process, not a power cut.
        # That is what the demos simulate, and it skips an fsync per commit. Use FULL
        # (the Ledger's default) where a power cut must not lose an accepted command.
        self.ledger = Ledger(self.directory / "ledger.db", crash_at=crash_at, synchronous=synchronous)
        # check_same_thread=False: the saver is used from LangGraph's background thread.
        self._conn = sqlite3.connect(self.directory / "checkpoints.db", check_same_thread=False)
        if synchronous.upper() in ("OFF", "NORMAL", "FULL", "EXTRA"):  # a fixed list: safe to format
            self._conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
        self.saver = SqliteSaver(self._conn)
        self.graph = build_counting_chat_graph(self.saver, self.calls)

    # ------------------------------------------------------------------ the API
    def open_conversation(self, tenant_id: str, conversation_id: str) -> None:
        """Create the conversation (idempotent); its thread_id is minted server-side."""
        self.ledger.create_conversation(tenant_id, conversation_id)

    def handle(self, tenant_id: str, command_id: str, conversation_id: str,
               payload: dict[str, Any]) -> Response:
        """Accept the command once, run it if this call created it, return its state."""
        if not isinstance(payload, dict) or payload.get("kind") not in ("message", "regenerate"):
            raise ValueError("payload must be a dict with kind 'message' or 'regenerate'")
        submitted = self.ledger.submit(tenant_id, command_id, conversation_id, payload)
        if submitted.created:
            self.dispatch()
        record = self.ledger.get_command(tenant_id, command_id)
        answer = record.result.get("answer") if isinstance(record.result, dict) else None
        return Response(status=record.status, created=submitted.created, answer=answer)

    def dispatch(self) -> int:
        """Deliver every pending command to the worker (also: the sweep after a restart)."""
        return len(self.ledger.dispatch_pending(self.work))

    def thread_config(self, tenant_id: str, conversation_id: str) -> dict[str, Any]:
        """The graph config of a conversation, resolved on the server side."""
        thread_id = self.ledger.get_conversation(tenant_id, conversation_id).thread_id
        return {"configurable": {"thread_id": thread_id}}

    # ------------------------------------------------------------------ the worker
    def work(self, delivery: Delivery) -> None:
        """Run one delivered command (at most one effect per run_id) and record the answer."""
        self.calls["deliveries"] += 1
        answer = self._run(delivery)
        self.ledger.record_result(delivery.tenant_id, delivery.command_id, {"answer": answer})

    def _run(self, d: Delivery) -> str:
        tag = {RUN_TAG: d.run_id}
        thread = {"configurable": {"thread_id": d.thread_id}}
        if self.dedupe:
            seen = next(iter(self.saver.list(thread, filter=tag, limit=1)), None)
            if seen is not None:  # this run already reached the checkpointer
                snapshot = self.graph.get_state(seen.config)
                if not snapshot.next:
                    self.calls["deduplicated"] += 1
                    return str(snapshot.values["messages"][-1].content)
                return self._invoke(None, thread, tag, d.run_id)  # resume the unfinished run
        payload = d.payload
        if payload["kind"] == "message":
            message = HumanMessage(content=payload["text"], id=payload["message_id"])
            return self._invoke({"messages": [message]}, thread, tag, d.run_id)
        before_answer = next(s for s in self.graph.get_state_history(thread) if s.next == ("reply",))
        return self._invoke(None, before_answer.config, tag, d.run_id)  # a fork (chapter 09)

    def _invoke(self, value: Any, config: dict[str, Any], tag: dict[str, str], run_id: str) -> str:
        config = {"configurable": {**config["configurable"], **tag}, "run_id": run_id}
        result = self.graph.invoke(value, config, durability="sync")
        return str(result["messages"][-1].content)

    # ------------------------------------------------------------------ lifecycle
    def restart(self, *, dedupe: bool | None = None) -> ChatService:
        """Close this object and open a new service on the same files, then sweep."""
        self.close()
        fresh = ChatService(self.directory, calls=self.calls, synchronous=self.synchronous,
                            dedupe=self.dedupe if dedupe is None else dedupe)
        fresh.dispatch()
        return fresh

    def close(self) -> None:
        self.ledger.close()
        self._conn.close()

    def __enter__(self) -> ChatService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_together(n: int, func: Callable[[], Any], *, timeout: float = 30.0) -> list[Any]:
    """Call ``func`` in ``n`` threads released at the same moment by a barrier.

    Returns the results in thread order; an exception a call raised is returned in its place.
    """
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n

    def worker(i: int) -> None:
        try:
            barrier.wait(timeout)
            results[i] = func()
        except Exception as exc:  # returned, so the caller can count outcomes
            results[i] = exc

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    return results


def table_counts(path: str | Path, tables: tuple[str, ...] = ("conversations", "commands", "outbox")) -> dict[str, int]:
    """Row count per table of a SQLite file, read on a fresh connection."""
    conn = sqlite3.connect(path)
    try:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        # Table names come from the fixed tuple above and are checked against the schema.
        return {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables if t in names}
    finally:
        conn.close()


def status_counts(path: str | Path) -> dict[str, Any]:
    """Commands per status and pending outbox rows of a ledger file (a fresh connection)."""
    conn = sqlite3.connect(path)
    try:
        statuses = dict(conn.execute("SELECT status, COUNT(*) FROM commands GROUP BY status ORDER BY status"))
        pending = conn.execute("SELECT COUNT(*) FROM outbox WHERE status = 'pending'").fetchone()[0]
        return {"commands": statuses, "outbox_pending": pending}
    finally:
        conn.close()


def crash_then_restart(point: str, *, dedupe: bool = True, directory: str | Path | None = None) -> dict[str, Any]:
    """One message command; the process "crashes" at ``point``; restart; the client retries.

    Runs in ``directory`` (default: a fresh temporary one) on conversation ``conv-<point>``
    of tenant ``acme``, so several points can share one directory. Returns a row: whether
    it crashed, deliveries, reply-node runs, deduplicated deliveries, the final status and
    whether the client's retry got the answer.
    """
    if directory is None:
        with tempfile.TemporaryDirectory() as tmp:
            return crash_then_restart(point, dedupe=dedupe, directory=tmp)
    name = point.replace("_", "-")
    request = ("acme", f"cmd-{name}", f"conv-{name}",
               {"kind": "message", "message_id": "m-1", "text": "I prefer a window seat"})
    service = ChatService(directory, crash_at=point, dedupe=dedupe)
    service.open_conversation("acme", request[2])
    crashed = None
    try:
        service.handle(*request)
    except SimulatedCrash as crash:
        crashed = crash.point
    service = service.restart()  # a new Ledger object on the same file, then a sweep
    try:
        retry = service.handle(*request)  # the client never got an answer: it retries
    finally:
        service.close()
    return {"crash_at": point, "crashed": crashed is not None,
            "deliveries": service.calls["deliveries"], "reply_runs": service.calls["reply"],
            "deduplicated": service.calls["deduplicated"], "status": retry.status,
            "retry_got_answer": retry.answer is not None}


def crash_table(points: tuple[str, ...], *, dedupe: bool = True) -> list[dict[str, Any]]:
    """:func:`crash_then_restart` for each point, all in one temporary directory.

    One directory and a connection held open on each file for the whole table: closing
    the last connection of a WAL database checkpoints and syncs it, which made each
    scenario pay for file creation, sync and deletion on a slow disk.
    """
    with tempfile.TemporaryDirectory() as tmp:
        holders = [sqlite3.connect(Path(tmp) / name) for name in ("ledger.db", "checkpoints.db")]
        for conn in holders:  # a statement opens the file; WAL mode makes the hold count
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        try:
            return [crash_then_restart(point, dedupe=dedupe, directory=tmp) for point in points]
        finally:
            for conn in holders:
                conn.close()
