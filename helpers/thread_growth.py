"""Measuring how a thread grows, for chapter 15 (keeping threads small). Plumbing, not the lesson.

- :func:`sqlite_stored` reads a ``SqliteSaver``'s two tables for one thread: rows and bytes
  (the serialized checkpoint, its metadata, and the pending writes);
- :func:`message_copies` decodes every stored checkpoint of a thread and adds up the
  messages their ``messages`` channel holds (a growing list is stored again, whole, in every
  checkpoint);
- :class:`HistoryReads` counts what a saver's ``get_delta_channel_history`` hands back, which
  is the read cost of rebuilding a ``DeltaChannel`` value from its ancestors;
- :func:`plot_growth` prints the numbers it plots, then draws them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
from langgraph.checkpoint.base import BaseCheckpointSaver
from matplotlib.axes import Axes

from .text_tables import format_table


def sqlite_stored(conn: sqlite3.Connection, thread_id: str) -> dict[str, int]:
    """Rows and bytes a SqliteSaver keeps for ``thread_id``, both tables together."""
    checkpoints, checkpoint_bytes = conn.execute(
        "SELECT count(*), coalesce(sum(length(checkpoint) + length(metadata)), 0) FROM checkpoints "
        "WHERE thread_id = ?", (thread_id,)).fetchone()
    writes, write_bytes = conn.execute(
        "SELECT count(*), coalesce(sum(length(value)), 0) FROM writes WHERE thread_id = ?", (thread_id,)).fetchone()
    return {"checkpoints": int(checkpoints), "writes": int(writes), "bytes": int(checkpoint_bytes + write_bytes)}


def message_copies(saver: BaseCheckpointSaver, thread_id: str, channel: str = "messages") -> int:
    """How many messages the stored checkpoints of ``thread_id`` hold together in ``channel``.

    Reads the checkpoints themselves (``saver.list``), not the rebuilt states: a channel
    that a checkpoint does not store (a ``DeltaChannel`` between snapshots) counts 0 there.
    """
    total = 0
    for item in saver.list({"configurable": {"thread_id": thread_id}}):
        value = item.checkpoint["channel_values"].get(channel)
        value = getattr(value, "value", value)  # a DeltaChannel snapshot wraps the list
        total += len(value) if isinstance(value, list) else 0
    return total


class HistoryReads:
    """Count the calls of ``saver.get_delta_channel_history`` and the writes they return.

    ``with HistoryReads(saver) as reads: ...`` wraps the method on this saver object only,
    and puts it back at the end. ``reads.writes`` is the number of ancestor writes handed
    back for replay (all channels), ``reads.calls`` the number of calls.
    """

    def __init__(self, saver: BaseCheckpointSaver) -> None:
        self.saver = saver
        self.calls = 0
        self.writes = 0

    def __enter__(self) -> HistoryReads:
        original = self.saver.get_delta_channel_history

        def counted(*, config: Mapping[str, Any], channels: Sequence[str]) -> Any:
            result = original(config=config, channels=channels)
            self.calls += 1
            self.writes += sum(len(entry["writes"]) for entry in result.values())
            return result

        self.saver.get_delta_channel_history = counted  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        del self.saver.get_delta_channel_history


def plot_growth(series: Mapping[str, Sequence[int]], *, unit: int, unit_name: str,
                title: str = "Bytes stored by one thread", ax: Axes | None = None) -> Axes:
    """Print, then plot, bytes against turns: one line per entry of ``series`` (index i = turn i + 1).

    The printed table shows turn 1 and every fifth turn in multiples of ``unit`` (one
    decimal), so that the numbers are ratios rather than raw byte counts; the plot uses the
    same units.
    """
    turns = len(next(iter(series.values())))
    shown = [t for t in range(1, turns + 1) if t % 5 == 0 or t == 1]
    rows = [{"turn": t, **{name: f"{values[t - 1] / unit:.1f}" for name, values in series.items()}} for t in shown]
    print(f"bytes stored, in units of {unit_name}:")
    print(format_table(rows))
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3))
    for name, values in series.items():
        ax.plot(range(1, turns + 1), [v / unit for v in values], marker=".", label=name)
    ax.set_xlabel("turns")
    ax.set_ylabel(f"stored, × {unit_name}")
    ax.set_title(title)
    ax.legend()
    return ax
