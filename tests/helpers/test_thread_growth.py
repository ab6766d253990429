"""helpers.thread_growth: what a SQLite thread stores, message copies, delta-history reads, the growth plot."""

import sqlite3

import matplotlib

matplotlib.use("Agg")

from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402

from helpers.thread_growth import (  # noqa: E402
    HistoryReads,
    message_copies,
    plot_growth,
    print_growth,
    sqlite_stored,
)
from helpers.travel_graphs import build_chat_graph, say  # noqa: E402


def test_sqlite_stored_and_message_copies_grow_quadratically():
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    graph = build_chat_graph(saver)
    assert sqlite_stored(conn, "t") == {"checkpoints": 0, "writes": 0, "bytes": 0}
    for n in range(4):
        say(graph, "t", f"turn {n}")
    stored = sqlite_stored(conn, "t")
    assert stored["checkpoints"] == 12 and stored["writes"] > 0 and stored["bytes"] > 0
    assert message_copies(saver, "t") == 3 * 4 * 4
    assert message_copies(saver, "other") == 0
    conn.close()


def test_history_reads_counts_and_restores():
    saver = InMemorySaver()
    original = saver.get_delta_channel_history
    with HistoryReads(saver) as reads:
        saver.get_delta_channel_history(config={"configurable": {"thread_id": "none"}}, channels=["messages"])
    assert reads.calls == 1 and reads.writes == 0
    assert saver.get_delta_channel_history == original


def test_plot_growth_prints_stable_facts(capsys):
    series = {"a": [10, 20, 30, 40], "b": [5, 5, 5, 6]}
    print_growth(series)
    ax = plot_growth(series)
    out = capsys.readouterr().out
    assert "from 2 to 4 turns" in out and "a: ×2.0" in out and "b: ×1.0" in out
    assert "largest to smallest after 4 turns: a, b" in out
    assert len(ax.lines) == 2
