"""Stable, structural views of what a checkpoint holds and how a saver stores it (chapter 02).

A checkpoint is full of values that change on every run: uuid6 ids, ISO timestamps, and
channel versions such as ``"00000000000000000000000000000006.0.0035203563"`` (a 32-digit
counter, a dot, then a random fraction). The functions here turn those into properties a
notebook can print and nbval can compare: labels instead of ids, the counter instead of the
version string, "an ISO-8601 UTC timestamp" instead of the time.

The SQLite functions open a checkpoint file read-only with the standard ``sqlite3`` module,
the way you would inspect a database you own, and report tables, columns, decoded metadata
and row counts per thread.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import StateSnapshot

from . import checkpoints
from .counting_saver import COUNTED, CountingSaver

# ---------------------------------------------------------------------------------------
# channel versions


def version_parts(version: Any) -> dict[str, Any]:
    """Split a channel version into its integer counter and whether a random part follows.

    ``"000...0006.0.0035"`` -> ``{"counter": 6, "random part": True}``. Savers that use plain
    integers (the base class default) give ``{"counter": n, "random part": False}``.
    """
    if isinstance(version, int) and not isinstance(version, bool):
        return {"counter": version, "random part": False}
    if not isinstance(version, str):
        raise TypeError(f"a channel version is a str or an int, not {type(version).__name__}")
    counter, _, rest = version.partition(".")
    if not counter.isdigit():
        raise ValueError("a channel version starts with digits")
    return {"counter": int(counter), "random part": bool(rest), "counter digits": len(counter)}


def version_rows(channel_versions: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per channel (sorted): channel, counter, digits, whether a random part exists."""
    rows = []
    for channel in sorted(channel_versions):
        parts = version_parts(channel_versions[channel])
        rows.append({"channel": channel, "counter": parts["counter"],
                     "digits": parts.get("counter digits", "-"), "random part": parts["random part"]})
    return rows


def versions_seen_rows(versions_seen: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``versions_seen`` as rows: which node last saw which channel, at which counter."""
    return [{"node": node, "channel": channel, "counter seen": version_parts(seen[channel])["counter"]}
            for node, seen in sorted(versions_seen.items()) for channel in sorted(seen)]


# ---------------------------------------------------------------------------------------
# snapshots, raw checkpoints, configs


def describe_timestamp(ts: Any) -> str:
    """A stable description of an ISO timestamp: its type and time zone, not the time."""
    if not isinstance(ts, str):
        return f"{type(ts).__name__} (not an ISO string)"
    parsed = datetime.fromisoformat(ts)
    return f"str, ISO-8601, tz={parsed.tzname() or 'none'}"


def label_config(config: Mapping[str, Any] | None, labels: Mapping[str, str]) -> Any:
    """``config["configurable"]`` with the checkpoint id replaced by its label (or None)."""
    if config is None:
        return None
    configurable = dict(config.get("configurable", {}))
    if "checkpoint_id" in configurable:
        cid = configurable["checkpoint_id"]
        configurable["checkpoint_id"] = labels.get(cid, "<unlabelled id>")
    return configurable


def describe_values(values: Any) -> str:
    if not isinstance(values, dict):
        return type(values).__name__
    parts = []
    for key in sorted(values):
        value = values[key]
        parts.append(f"{key}: {len(value)} item(s)" if isinstance(value, (list, tuple, dict)) else f"{key}: {value!r}")
    return "dict {" + ", ".join(parts) + "}"


def snapshot_rows(snapshot: StateSnapshot, labels: Mapping[str, str]) -> list[dict[str, str]]:
    """Every field of a ``StateSnapshot`` with a stable description of its content."""
    tasks = ", ".join(f"PregelTask(name={t.name!r}, interrupts={len(t.interrupts)})" for t in snapshot.tasks) or "()"
    shown = {
        "values": describe_values(snapshot.values),
        "next": repr(tuple(snapshot.next)),
        "config": repr(label_config(snapshot.config, labels)),
        "metadata": repr(dict(sorted(snapshot.metadata.items()))),
        "created_at": describe_timestamp(snapshot.created_at),
        "parent_config": repr(label_config(snapshot.parent_config, labels)),
        "tasks": tasks,
        "interrupts": repr(tuple(snapshot.interrupts)),
    }
    return [{"field": f, "content": shown.get(f, "(not described)")} for f in snapshot._fields]


def checkpoint_rows(checkpoint: Mapping[str, Any], labels: Mapping[str, str]) -> list[dict[str, str]]:
    """Every key of a raw checkpoint dict with a stable description (no ids, no versions)."""
    described = {
        "v": repr(checkpoint.get("v")),
        "id": f"uuid6 string, label {labels.get(checkpoint.get('id'), '?')}",
        "ts": describe_timestamp(checkpoint.get("ts")),
        "channel_values": "channels " + ", ".join(sorted(checkpoint.get("channel_values", {}))),
        "channel_versions": "counters " + ", ".join(
            f"{ch}={version_parts(v)['counter']}" for ch, v in sorted(checkpoint.get("channel_versions", {}).items())),
        "versions_seen": "nodes " + ", ".join(sorted(checkpoint.get("versions_seen", {}))),
        "updated_channels": repr(checkpoint.get("updated_channels")),
    }
    return [{"key": k, "content": described.get(k, "(not described)")} for k in sorted(checkpoint)]


# ---------------------------------------------------------------------------------------
# the saver interface


def measure_calls(counting_saver: CountingSaver, operations: Mapping[str, Callable[[], Any]],
                  methods: Sequence[str] = COUNTED) -> list[dict[str, Any]]:
    """Run each operation in order and report the saver calls it caused.

    ``counting_saver`` is reset before each operation. Returns one row per operation with a
    column per interface method in ``methods``.
    """
    rows = []
    for name, operation in operations.items():
        counting_saver.reset()
        result = operation()
        if hasattr(result, "__next__"):  # a lazy iterator does no work until consumed
            list(result)
        rows.append({"operation": name, **counting_saver.counts(methods)})
    return rows


def implemented_methods(savers: Sequence[type[BaseCheckpointSaver]], methods: Sequence[str]) -> list[dict[str, str]]:
    """Which saver classes implement which interface methods (``yes``) and which inherit the base (``-``).

    A method a saver does not override is ``BaseCheckpointSaver``'s own, which raises
    ``NotImplementedError`` (``get_next_version`` aside: the base counts with integers).
    """
    def implements(cls: type[BaseCheckpointSaver], method: str) -> bool:
        return getattr(cls, method) is not getattr(BaseCheckpointSaver, method)

    return [{"method": method, **{cls.__name__: "yes" if implements(cls, method) else "-" for cls in savers}}
            for method in methods]


# shown in solutions/02_checkpoint_anatomy.ipynb
def blob_rows(saver: InMemorySaver, thread_id: str) -> list[dict]:
    """For each checkpoint of ``thread_id``, oldest first: the blobs stored with it, and those reused from before."""
    tuples = sorted(saver.list({"configurable": {"thread_id": thread_id}}),
                    key=lambda item: checkpoints.checkpoint_id(item.config))
    labels = checkpoints.label_ids(checkpoints.checkpoint_id(item.config) for item in tuples)
    rows, previous = [], {}
    for item in tuples:
        versions = item.checkpoint["channel_versions"]  # the channel versions this checkpoint uses
        new, reused = [], []
        for channel in sorted(versions):
            name = f"{channel}@{int(versions[channel].split('.')[0])}"  # the counter, without the random part
            if previous.get(channel) == versions[channel]:
                reused.append(name)
                continue
            blob_type, data = saver.blobs[(thread_id, "", channel, versions[channel])]  # one blob per version
            if blob_type == "empty":
                new.append(f"{name} (no value)")
            elif channel == "messages":
                count = len(saver.serde.loads_typed((blob_type, data)))
                new.append(f"{name} ({count} message{'s' if count != 1 else ''})")
            else:
                new.append(f"{name} ({'the input' if channel == '__start__' else 'a trigger'})")
        rows.append({"label": labels[checkpoints.checkpoint_id(item.config)], "new blobs": ", ".join(new) or "-",
                     "reused from an earlier checkpoint": ", ".join(reused) or "-"})
        previous = versions
    return rows


# ---------------------------------------------------------------------------------------
# a SqliteSaver file, read with sqlite3


def _connect(path: str | Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def sqlite_tables(path: str | Path) -> list[str]:
    """Names of the tables in the SQLite file at ``path`` (from ``sqlite_master``), sorted."""
    with closing(_connect(path)) as con:
        return [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]


# shown in solutions/02_checkpoint_anatomy.ipynb
def sqlite_columns(path: str | Path) -> list[dict]:
    """Every column of every table in the SQLite file at ``path``: table, column, type, place in the primary key."""
    rows = []
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as connection:  # read-only
        tables = [name for (name,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for table in tables:
            for _cid, name, col_type, _notnull, _default, pk in connection.execute(f'PRAGMA table_info("{table}")'):
                rows.append({"table": table, "column": name, "type": col_type, "pk": pk or "-"})
    return rows


# shown in solutions/02_checkpoint_anatomy.ipynb
def stored_checkpoints(path: str | Path, thread_id: str) -> list[dict]:
    """The root graph's ``checkpoints`` rows of one thread, oldest first: ids as labels, metadata decoded from JSON."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as connection:
        rows = connection.execute(
            "SELECT checkpoint_id, parent_checkpoint_id, type, typeof(checkpoint), metadata "
            "FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id",
            (thread_id,)).fetchall()
    labels = checkpoints.label_ids(row[0] for row in rows)
    return [{"label": labels[cid], "parent": labels.get(parent, "-") if parent else "-", "type": blob_type,
             "checkpoint column": sql_type, "metadata (JSON)": json.dumps(json.loads(metadata), sort_keys=True)}
            for cid, parent, blob_type, sql_type, metadata in rows]


# shown in solutions/02_checkpoint_anatomy.ipynb
def stored_writes(path: str | Path, thread_id: str) -> list[dict]:
    """The ``writes`` rows of one thread: the checkpoint they hang off (label), task path, idx, channel, value type."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as connection:
        ids = [cid for (cid,) in connection.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''", (thread_id,))]
        rows = connection.execute(
            "SELECT checkpoint_id, task_path, idx, channel, type FROM writes WHERE thread_id = ? "
            "ORDER BY checkpoint_id, task_path, idx", (thread_id,)).fetchall()
    labels = checkpoints.label_ids(ids)
    return [{"checkpoint": labels.get(cid, "?"), "task_path": task_path, "idx": idx, "channel": channel,
             "type": value_type} for cid, task_path, idx, channel, value_type in rows]


# shown in solutions/02_checkpoint_anatomy.ipynb
def rows_per_thread(path: str | Path) -> list[dict]:
    """Row counts per table and thread_id in a SqliteSaver file (both tables, sorted)."""
    rows = []
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as connection:
        for table in ("checkpoints", "writes"):
            counts = dict(connection.execute(f"SELECT thread_id, COUNT(*) FROM {table} GROUP BY thread_id"))
            rows += [{"table": table, "thread_id": thread, "rows": counts[thread]} for thread in sorted(counts)]
    return rows


# shown in solutions/02_checkpoint_anatomy.ipynb
def decode_checkpoint_blob(serde, path: str | Path, thread_id: str) -> dict:
    """Decode the newest checkpoint blob of ``thread_id`` with ``serde``; report what it decodes to, not its values."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as connection:
        blob_type, blob = connection.execute(
            "SELECT type, checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
            "ORDER BY checkpoint_id DESC LIMIT 1", (thread_id,)).fetchone()
    decoded = serde.loads_typed((blob_type, blob))  # the saver's serializer: (type, bytes) -> the object
    return {"type column": blob_type, "raw bytes are": type(blob).__name__, "decodes to": type(decoded).__name__,
            "keys": sorted(decoded), "messages inside": len(decoded.get("channel_values", {}).get("messages", []))}


# shown in solutions/02_checkpoint_anatomy.ipynb
def trigger_rows(graph, config, node: str, channel: str) -> list[dict]:
    """Why ``node`` is (not) pending in each checkpoint of a thread, oldest first (versions shown by their counter)."""
    thread = {"configurable": {"thread_id": config["configurable"]["thread_id"]}}
    tuples = sorted(graph.checkpointer.list(thread), key=lambda item: checkpoints.checkpoint_id(item.config))
    labels = checkpoints.label_ids(checkpoints.checkpoint_id(item.config) for item in tuples)
    rows = []
    for item in tuples:
        version = item.checkpoint["channel_versions"].get(channel)  # the trigger channel's version now
        seen = item.checkpoint["versions_seen"].get(node, {}).get(channel)  # the version the node last consumed
        rows.append({"label": labels[checkpoints.checkpoint_id(item.config)],
                     f"{channel} counter": int(version.split(".")[0]) if version else "-",
                     f"{node} saw": int(seen.split(".")[0]) if seen else "-",
                     "holds a value": channel in item.checkpoint["channel_values"],
                     f"{node} in next": node in graph.get_state(item.config).next})
    return rows
