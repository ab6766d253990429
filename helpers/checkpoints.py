"""Readable, stable views of a thread's checkpoints.

Checkpoint ids are uuid6 strings that change every run, so notebooks never print them.
Instead each checkpoint gets a label, ``C0`` for the oldest of the thread, ``C1`` for the
next, and so on (ids sort in time order, so labels follow time). Rows carry what a learner
needs to read a history: step, source, what runs next, message count, the channels
present and the channels this checkpoint changed, and the parent's label.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.pregel import Pregel

from .text_tables import format_table

HISTORY_COLUMNS = ("label", "step", "source", "next", "messages", "changed", "parent")


def thread_config(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` without ``checkpoint_id``: the whole history, not one entry of it."""
    configurable = {k: v for k, v in config.get("configurable", {}).items() if k != "checkpoint_id"}
    return {**config, "configurable": configurable}


def checkpoint_id(config: dict[str, Any] | None) -> str | None:
    return None if config is None else config.get("configurable", {}).get("checkpoint_id")


def label_ids(ids: Iterable[str], prefix: str = "C") -> dict[str, str]:
    """Map checkpoint ids to ``C0, C1, ...`` in time order (uuid6 strings sort by time)."""
    return {cid: f"{prefix}{i}" for i, cid in enumerate(sorted(set(ids)))}


def history_rows(graph: Pregel, config: RunnableConfig,
                 saver: BaseCheckpointSaver | None = None) -> list[dict[str, Any]]:
    """One dict per checkpoint of the thread in ``config``, oldest first.

    ``graph`` is a compiled graph with a checkpointer; ``saver`` defaults to it.
    """
    saver = saver or graph.checkpointer
    snapshots = list(graph.get_state_history(thread_config(config)))
    labels = label_ids(checkpoint_id(s.config) for s in snapshots)
    rows = []
    for snap in sorted(snapshots, key=lambda s: checkpoint_id(s.config)):
        raw = saver.get_tuple(snap.config)
        channels = raw.checkpoint["channel_values"] if raw else {}
        messages = snap.values.get("messages") if isinstance(snap.values, dict) else None
        rows.append({
            "label": labels[checkpoint_id(snap.config)],
            "step": snap.metadata.get("step"),
            "source": snap.metadata.get("source"),
            "next": tuple(snap.next),
            "messages": len(messages) if messages is not None else None,
            "channels": tuple(sorted(channels)),
            "changed": tuple(sorted(raw.checkpoint.get("updated_channels") or ())) if raw else (),
            "parent": labels.get(checkpoint_id(snap.parent_config), checkpoint_id(snap.parent_config)),
            "writes": len(raw.pending_writes or ()) if raw else 0,
        })
    return rows


def history_table(graph: Pregel, config: RunnableConfig, columns: Sequence[str] = HISTORY_COLUMNS) -> str:
    return format_table(history_rows(graph, config), columns)


def print_history(graph: Pregel, config: RunnableConfig, columns: Sequence[str] = HISTORY_COLUMNS) -> None:
    """Print the thread's history as a table with stable labels (no raw ids)."""
    print(history_table(graph, config, columns))


def count_checkpoints(graph: Pregel, config: RunnableConfig) -> int:
    return sum(1 for _ in graph.get_state_history(thread_config(config)))
