"""Measuring how a thread grows, for chapter 15 (keeping threads small). Plumbing, not the lesson.

- :func:`sqlite_stored` reads a ``SqliteSaver``'s two tables for one thread: rows and bytes
  (the serialized checkpoint, its metadata, and the pending writes);
- :func:`message_copies` decodes every stored checkpoint of a thread and adds up the
  messages their ``messages`` channel holds (a growing list is stored again, whole, in every
  checkpoint);
- :class:`HistoryReads` counts what a saver's ``get_delta_channel_history`` hands back, which
  is the read cost of rebuilding a ``DeltaChannel`` value from its ancestors;
- :func:`print_growth` prints what :func:`plot_growth` draws, as stable facts (growth, order).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
from langgraph.checkpoint.base import BaseCheckpointSaver
from matplotlib.axes import Axes


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


def print_growth(series: Mapping[str, Sequence[int]]) -> None:
    """Print what :func:`plot_growth` draws, as stable facts (index i of a series = turn i + 1).

    Byte counts vary a little from run to run (a saver ends each channel version with a
    random number of digits), so this prints the growth from half the turns to all of them,
    to the nearest 0.5, and the order of the series at the last turn.
    """
    turns = len(next(iter(series.values())))
    half = turns // 2
    print(f"from {half} to {turns} turns, the bytes stored grow (to the nearest 0.5):")
    for name, values in series.items():
        print(f"  {name}: ×{round(2 * values[-1] / values[half - 1]) / 2}")
    ordered = sorted(series, key=lambda name: series[name][-1], reverse=True)
    print(f"largest to smallest after {turns} turns:", ", ".join(ordered))


def plot_growth(series: Mapping[str, Sequence[int]], *, title: str = "Bytes stored by one thread",
                ax: Axes | None = None) -> Axes:
    """Plot kilobytes stored against turns, one line per series (:func:`print_growth` prints the facts)."""
    turns = len(next(iter(series.values())))
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3))
    for name, values in series.items():
        ax.plot(range(1, turns + 1), [v / 1000 for v in values], marker=".", label=name)
    ax.set_xlabel("turns")
    ax.set_ylabel("kB stored")
    ax.set_title(title)
    ax.legend()
    return ax
