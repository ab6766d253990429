"""Small tools for chapter 10 (business IDs): ID properties, PII footprints, runtime IDs, a loopback API.

* :func:`uuid_properties` mints uuid4 (``uuid.uuid4``), uuid7 (the pinned ``uuid6``
  package; Python 3.11 has none) and uuid5 (``uuid.uuid5``) IDs and *measures* their
  properties (random bits, sorted by creation, embedded time, deterministic), never
  printing raw values; :func:`uuid7_burst` shows how far ahead of the
  clock the pinned ``uuid6`` package pushes uuid7 timestamps when many are minted at once,
  and :func:`uuid7_paced_lead` how that lead grows at a steady rate (on a simulated clock).
* :func:`pii_footprint` counts, per table and column of a SQLite file, the rows whose text
  contains a given string (e.g. an e-mail address someone put into a ``thread_id``).
* :func:`build_hold_graph` (shown in chapter 10) holds the outbound and the return seat at
  the airline; each node asks a function you pass for the idempotency key it would send,
  and logs what it saw; the command's ID comes in ``config["configurable"]["command_id"]``.
  :func:`crash_inside_hold` crashes a real child process inside that
  node (``os._exit``, default durability, a saver with a remote database's write latency),
  resumes the run in this process and returns what the node saw both times.
  The child is a fork of this process (the notebook's kernel, LangGraph already imported),
  made by :func:`helpers.kernel_forks.run_forked`; without ``os.fork``, a fresh interpreter.
  :func:`label_values` turns logged IDs into stable labels.
* :class:`LoopbackApi` is a one-route JSON API on 127.0.0.1 that hands each POSTed body to
  a function of the notebook, one request at a time, in arrival order: chapter 10's app
  runs in real child processes and talks to it over HTTP.
"""

from __future__ import annotations

import json
import operator
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import ExecutionInfo, Runtime
from langgraph.types import RetryPolicy
from uuid6 import uuid7

from helpers.kernel_forks import run_forked
from helpers.processes import CRASH_EXIT_CODE

__all__ = ["ID_NAMESPACE", "HoldState", "LoopbackApi", "SlowSqliteSaver", "TransientError",
           "build_hold_graph", "crash_inside_hold", "label_values", "pii_footprint",
           "uuid7_burst", "uuid_properties"]

# ----------------------------------------------------------------------------- uuids
def _embedded_ms(value: str) -> int:
    return uuid.UUID(value).int >> 80  # uuid7: the first 48 bits are Unix milliseconds


def _varying_bits(ids: list[str], time_bits: int) -> int:
    """Bit positions, below the first ``time_bits`` bits, in which the IDs are not all equal."""
    first = uuid.UUID(ids[0]).int
    differ = 0
    for value in ids:
        differ |= uuid.UUID(value).int ^ first
    return bin(differ & ((1 << (128 - time_bits)) - 1)).count("1")


ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "urn:langgraph-persistence-course:ids")


def uuid_properties(sample: int = 200) -> list[dict[str, Any]]:
    """One row per kind, measured on ``sample`` IDs: what each kind guarantees.

    ``random_bits`` counts the bit positions (outside uuid7's 48-bit time field) in which
    IDs minted for the *same* input differ; for uuid5 that input is one fixed name.
    """
    makers: dict[str, Callable[[int], str]] = {
        "uuid4": lambda i: str(uuid.uuid4()),
        "uuid7": lambda i: str(uuid7()),
        "uuid5": lambda i: str(uuid.uuid5(ID_NAMESPACE, f"acme/cmd-{i:04d}")),
    }
    rows = []
    for kind, make in makers.items():
        now_ms = time.time_ns() // 10**6
        ids = [make(i) for i in range(sample)]
        same_input = [make(0) for _ in range(sample)]
        version = uuid.UUID(ids[0]).version
        rows.append({
            "kind": kind, "version": version,
            "random_bits": _varying_bits(same_input, 48 if version == 7 else 0),
            "sorted_by_creation": ids == sorted(ids),
            "embeds_time": version == 7 and all(abs(_embedded_ms(i) - now_ms) < 60_000 for i in ids),
            "same_input_same_id": len(set(same_input)) == 1,
        })
    return rows


def uuid7_burst(n: int = 20_000) -> dict[str, Any]:
    """Mint ``n`` uuid7s as fast as possible; where the last one's timestamp lands.

    The pinned ``uuid6`` package keeps uuid7s sorted within a process by giving each new ID
    at least the previous ID's millisecond plus one, so a burst runs ahead of the clock.
    """
    ids = [str(uuid7()) for _ in range(n)]
    now_ms = time.time_ns() // 10**6
    return {"ids": n, "distinct": len(set(ids)) == n, "sorted": ids == sorted(ids),
            "last_ahead_ms": _embedded_ms(ids[-1]) - now_ms}


def uuid7_paced_lead(rate: int, seconds: int = 2) -> list[int]:
    """How far ahead of the clock (ms) uuid7s minted at a steady ``rate`` a second run, after each second.

    Runs the pinned ``uuid6.uuid7`` itself on a simulated clock (its ``time`` module swapped
    for one whose ``time_ns`` this function advances by 1/rate s per ID), so no time passes
    and the result is exact; the module's real clock and last timestamp are restored after.
    The lead is the last ID's millisecond minus the clock's millisecond when it was minted.
    """
    import types

    import uuid6

    saved_time, saved_last = uuid6.time, uuid6._last_v7_timestamp
    clock_ns = 1_750_000_000_000 * 10**6  # an arbitrary whole millisecond (2025)
    step_ns = 10**9 // rate
    uuid6.time = types.SimpleNamespace(time_ns=lambda: clock_ns)
    uuid6._last_v7_timestamp = None
    try:
        leads = []
        for _ in range(seconds):
            for _ in range(rate):
                last = uuid6.uuid7()
                minted_ms = clock_ns // 10**6
                clock_ns += step_ns
            leads.append(_embedded_ms(str(last)) - minted_ms)
        return leads
    finally:
        uuid6.time, uuid6._last_v7_timestamp = saved_time, saved_last


# ----------------------------------------------------------------------------- PII
def pii_footprint(path: str | Path, needle: str) -> list[dict[str, Any]]:
    """Rows per (table, column) of a SQLite file whose text (or UTF-8 blob) contains ``needle``."""
    conn = sqlite3.connect(path)
    try:
        found = []
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for table in tables:
            # Names come from sqlite_master, quoted; the needle is a bound parameter.
            columns = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
            for column in columns:
                rows = conn.execute(
                    f'SELECT COUNT(*) FROM "{table}" WHERE instr(CAST("{column}" AS BLOB), CAST(? AS BLOB)) > 0',
                    (needle,)).fetchone()[0]
                if rows:
                    found.append({"table": table, "column": column, "rows": rows})
        return found
    finally:
        conn.close()


# ----------------------------------------------------------------------------- runtime ids
# shown in solutions/10_business_ids.ipynb
class TransientError(RuntimeError):
    """The airline API timed out (a stand-in failure)."""


# shown in solutions/10_business_ids.ipynb
class HoldState(TypedDict):
    holds: Annotated[list[str], operator.add]


# shown in solutions/10_business_ids.ipynb
def build_hold_graph(checkpointer: BaseCheckpointSaver | None, key_fn: Callable[[Any, str, ExecutionInfo], Any],
                     log: list[dict[str, Any]], *,
                     fail: dict[str, int] | None = None, retry: bool = True,
                     parallel: bool = True) -> CompiledStateGraph:
    """START -> hold_outbound (and hold_return, if parallel) -> END: seat holds at the airline.

    Each node asks key_fn(command_id, effect, runtime.execution_info) for the idempotency
    key it would send to the airline, and logs what it saw. The command's ID comes in
    config["configurable"]["command_id"]. fail={"hold_outbound": 1} makes that node time
    out once (TransientError); with retry the nodes have a RetryPolicy of 3 attempts.
    """
    remaining = dict(fail or {})
    lock = threading.Lock()

    def make_hold(effect: str) -> Callable[[HoldState, RunnableConfig, Runtime], dict[str, list[str]]]:
        def hold(state: HoldState, config: RunnableConfig, runtime: Runtime) -> dict[str, list[str]]:
            info = runtime.execution_info
            command_id = config["configurable"].get("command_id")
            key = key_fn(command_id, effect, info)  # here the airline would be called with this key
            with lock:
                log.append({"node": effect, "attempt": info.node_attempt, "key": key, "task_id": info.task_id,
                            "run_id": info.run_id, "command_id": command_id,
                            "thread_id": info.thread_id, "checkpoint_id": info.checkpoint_id})
                failing = remaining.get(effect, 0) > 0
                if failing:
                    remaining[effect] -= 1
            if failing:
                raise TransientError(f"{effect}: the airline API timed out")
            return {"holds": [effect]}

        return hold

    policy = RetryPolicy(max_attempts=3, initial_interval=0.0, jitter=False, retry_on=TransientError)
    builder = StateGraph(HoldState)
    for effect in ["hold_outbound", "hold_return"] if parallel else ["hold_outbound"]:
        builder.add_node(effect, make_hold(effect), retry_policy=policy if retry else None)
        builder.add_edge(START, effect)
        builder.add_edge(effect, END)
    return builder.compile(checkpointer=checkpointer)


class SlowSqliteSaver(SqliteSaver):
    """A SqliteSaver whose writes take ``delay`` seconds longer, like a database across a network."""

    def __init__(self, conn: sqlite3.Connection, delay: float) -> None:
        super().__init__(conn)
        self.delay = delay

    def put(self, *args: Any, **kwargs: Any) -> Any:
        time.sleep(self.delay)
        return super().put(*args, **kwargs)

    def put_writes(self, *args: Any, **kwargs: Any) -> Any:
        time.sleep(self.delay)
        return super().put_writes(*args, **kwargs)


INFO_FIELDS = ("checkpoint_id", "checkpoint_ns", "task_id", "thread_id", "run_id", "node_attempt")

def _crash_in_hold(path: str, seen: str, command_id: str, delay: float) -> None:
    """The child of :func:`crash_inside_hold`: run the hold graph and die inside the node."""

    def crash_in_node(command: Any, effect: str, info: ExecutionInfo) -> None:
        Path(seen).write_text(json.dumps({f: getattr(info, f) for f in INFO_FIELDS}), encoding="utf-8")
        os._exit(CRASH_EXIT_CODE)  # a real crash inside the node, before the airline answered

    saver = SlowSqliteSaver(sqlite3.connect(path, check_same_thread=False), delay)
    graph = build_hold_graph(saver, crash_in_node, [], retry=False, parallel=False)
    config = {"configurable": {"thread_id": "trip-crash", "command_id": command_id}, "run_id": uuid.uuid4()}
    graph.invoke({"holds": []}, config)  # the default durability: "async"


def crash_inside_hold(directory: str | Path, command_id: str, *, delay: float = 0.05) -> list[ExecutionInfo]:
    """What ``hold_outbound`` saw before a real crash inside it, and when the run was delivered again.

    A child process runs the hold graph under the default durability on a SQLite file whose
    writes take ``delay`` seconds longer; the node calls ``os._exit`` at once. The child is a
    fork of this process (:func:`helpers.kernel_forks.run_forked`, as in chapters 01 and 07),
    which has LangGraph imported already: a fresh interpreter, or a process server started
    for it, would first spend about 1.5 s of CPU importing it. Without ``os.fork`` (Windows)
    it runs in a fresh interpreter; its output goes to ``crash-child.log`` in ``directory``.
    This process then delivers the command again, as a dispatcher would: ``invoke(None,
    ...)`` if a checkpoint survived, else the input again, with the same command ID and a
    new LangGraph run ID. Returns the two ExecutionInfo objects the node got.
    """
    folder = Path(directory)
    path, seen, child_log = folder / "holds.db", folder / "seen-before-crash.json", folder / "crash-child.log"
    code = run_forked(_crash_in_hold, str(path), str(seen), command_id, delay, log=child_log)
    if code != CRASH_EXIT_CODE:
        tail = child_log.read_text(encoding="utf-8")[-1500:] if child_log.exists() else ""
        raise RuntimeError(f"the crashing child exited with {code}, not {CRASH_EXIT_CODE}: it never reached the node"
                           + (f":\n{tail}" if tail else ""))
    before = ExecutionInfo(**json.loads(seen.read_text(encoding="utf-8")))
    log: list[dict[str, Any]] = []
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        graph = build_hold_graph(SqliteSaver(conn), lambda command, effect, info: info, log, parallel=False)
        config = {"configurable": {"thread_id": "trip-crash", "command_id": command_id}, "run_id": uuid.uuid4()}
        survived = graph.get_state(config).next
        graph.invoke(None if survived else {"holds": []}, config)
    finally:
        conn.close()
    return [before, log[0]["key"]]


def label_values(values: Iterable[Any], prefix: str) -> dict[Any, str]:
    """Map values to ``prefix1, prefix2, ...`` in order of first appearance (None stays '-')."""
    labels: dict[Any, str] = {None: "-"}
    for value in values:
        if value not in labels:
            labels[value] = f"{prefix}{len(labels)}"
    return labels


# ----------------------------------------------------------------------------- the loopback API
class LoopbackApi:
    """A one-route JSON API on 127.0.0.1 (a free port): ``POST`` a JSON body, get ``handler(body)`` back as JSON.

    One thread serves one request at a time, in the order the clients connected, so a demo
    whose clients run one after another sees their requests in that order. A client that
    went away before its answer was written (a reloaded page) is not an error: the handler
    has run, the answer is dropped. ``received`` counts requests. :meth:`close` stops the
    server and its thread; use it in a visible cell.
    """

    def __init__(self, handler: Callable[[dict[str, Any]], Any]) -> None:
        api = self
        self.received = 0

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the name http.server calls)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                api.received += 1
                data = json.dumps(handler(body)).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client is gone: nobody reads this answer
                    pass

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's name)
                pass  # no access log in a notebook cell

        class Server(HTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that hung up mid-answer

        self._server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/commands"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="loopback-api", daemon=True)
        self._thread.start()

    def close(self) -> bool:
        """Stop serving and close the socket; True when the server thread has ended."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
        return not self._thread.is_alive()
