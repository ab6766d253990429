"""Small tools for chapter 10 (business IDs): ID properties, PII footprints, runtime IDs.

* :func:`uuid_properties` mints uuid4 / uuid7 / uuid5 IDs with :mod:`helpers.ledger` and
  reports their *properties* (version, random bits, sortable by creation, embeds a time,
  deterministic), never the raw values.
* :func:`pii_footprint` counts, per table and column of a SQLite file, the rows whose text
  contains a given string (e.g. an e-mail address someone put into a ``thread_id``).
* :func:`build_hold_graph` builds a graph whose nodes ``hold_outbound`` / ``hold_return``
  (a stand-in for an airline's "hold this seat" API) compute an idempotency key from
  ``runtime.execution_info`` with a function you pass, and log what they saw. Nodes can be
  told to fail (a :class:`TransientError`) a number of times, with or without a
  ``RetryPolicy``. :func:`label_values` turns the logged IDs into stable labels.
* :data:`ACCEPT_SCHEMA` / :func:`open_commands_table`: the minimal ``commands`` table of
  exercise 10.1, on an autocommit connection (each statement commits on its own).
"""

from __future__ import annotations

import operator
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from helpers.ledger import RUN_NAMESPACE, new_command_id, new_time_ordered_id, stable_id

__all__ = ["ACCEPT_SCHEMA", "TransientError", "build_hold_graph", "label_values", "open_commands_table", "pii_footprint", "uuid_properties"]


# ----------------------------------------------------------------------------- uuids
def _embedded_ms(value: str) -> int:
    return uuid.UUID(value).int >> 80  # uuid7: the first 48 bits are Unix milliseconds


def uuid_properties(sample: int = 200) -> list[dict[str, Any]]:
    """One row per kind: how the ledger mints it and what it guarantees."""
    makers: dict[str, Callable[[int], str]] = {
        "uuid4": lambda i: new_command_id(),
        "uuid7": lambda i: new_time_ordered_id(),
        "uuid5": lambda i: stable_id(RUN_NAMESPACE, f"acme/cmd-{i:04d}"),
    }
    rows = []
    now_ms = time.time_ns() // 10**6
    for kind, make in makers.items():
        ids = [make(i) for i in range(sample)]
        version = uuid.UUID(ids[0]).version
        random_bits = {4: 122, 7: 74, 5: 0}[version]
        embeds_time = version == 7 and all(abs(_embedded_ms(i) - now_ms) < 60_000 for i in ids)
        rows.append({
            "kind": kind, "version": version, "random_bits": random_bits,
            "sorted_by_creation": ids == sorted(ids),
            "embeds_time": embeds_time,
            "same_input_same_id": make(0) == make(0),
        })
    return rows


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
class TransientError(RuntimeError):
    """The airline API timed out (a stand-in failure)."""


class HoldState(TypedDict):
    holds: Annotated[list[str], operator.add]


def build_hold_graph(checkpointer: Any, key_fn: Callable[[Any], Any], log: list[dict[str, Any]], *,
                     fail: dict[str, int] | None = None, retry: bool = True, parallel: bool = True):
    """START -> hold_outbound (and hold_return, if ``parallel``) -> END.

    Each node calls ``key_fn(runtime.execution_info)`` and appends a dict to ``log``: node,
    attempt, key, and the execution_info fields task_id, run_id, thread_id, checkpoint_id.
    ``fail={"hold_outbound": 1}`` makes that node raise TransientError on its first call.
    With ``retry`` the nodes have ``RetryPolicy(max_attempts=3)`` with no waiting.
    """
    remaining = dict(fail or {})
    lock = threading.Lock()

    def make(name: str):
        def node(state: HoldState, runtime: Runtime) -> dict[str, Any]:
            info = runtime.execution_info
            key = key_fn(info)
            with lock:
                log.append({"node": name, "attempt": info.node_attempt, "key": key,
                            "task_id": info.task_id, "run_id": info.run_id,
                            "thread_id": info.thread_id, "checkpoint_id": info.checkpoint_id})
                failing = remaining.get(name, 0) > 0
                if failing:
                    remaining[name] -= 1
            if failing:
                raise TransientError(f"{name}: the airline API timed out")
            return {"holds": [name]}
        return node

    policy = RetryPolicy(max_attempts=3, initial_interval=0.0, jitter=False, retry_on=TransientError) if retry else None
    builder = StateGraph(HoldState)
    names = ["hold_outbound", "hold_return"] if parallel else ["hold_outbound"]
    for name in names:
        builder.add_node(name, make(name), retry_policy=policy)
        builder.add_edge(START, name)
        builder.add_edge(name, END)
    return builder.compile(checkpointer=checkpointer)


def label_values(values: Iterable[Any], prefix: str) -> dict[Any, str]:
    """Map values to ``prefix1, prefix2, ...`` in order of first appearance (None stays '-')."""
    labels: dict[Any, str] = {None: "-"}
    for value in values:
        if value not in labels:
            labels[value] = f"{prefix}{len(labels)}"
    return labels


# ----------------------------------------------------------------------------- exercise 10.1
ACCEPT_SCHEMA = ("CREATE TABLE IF NOT EXISTS commands (tenant_id TEXT NOT NULL, command_id TEXT NOT NULL, "
                 "fingerprint TEXT NOT NULL, PRIMARY KEY (tenant_id, command_id))")


def open_commands_table(path: str | Path = ":memory:", *, timeout: float = 10.0) -> sqlite3.Connection:
    """An autocommit connection (WAL for files) to a database holding :data:`ACCEPT_SCHEMA`.

    ``check_same_thread=False`` only so that a checker may close it from another thread;
    use one connection per thread.
    """
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    if str(path) != ":memory:":
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(ACCEPT_SCHEMA)
    return conn
