"""helpers.state_growth: trimming keeps the newest messages; storage counts on a real PostgreSQL."""

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver

from helpers.servers import leftover_server_processes, postgres_server
from helpers.state_growth import build_trimming_chat_graph, stored_message_copies, stored_rows, trimmed
from helpers.travel_graphs import build_chat_graph, say


def test_trimmed_removes_all_but_the_newest():
    messages = [HumanMessage("a", id="1"), AIMessage("b", id="2"), HumanMessage("c", id="3")]
    assert [r.id for r in trimmed(messages, 1)] == ["1", "2"]
    assert trimmed(messages, 5) == []
    assert [r.id for r in trimmed(messages, 0)] == ["1", "2", "3"]
    with pytest.raises(ValueError):
        trimmed(messages, -1)


def test_trimming_graph_bounds_state_not_history():
    graph = build_trimming_chat_graph(InMemorySaver(), keep=4)
    config = {"configurable": {"thread_id": "t"}}
    answers = [say(graph, "t", text) for text in ("Window seat, please.", "Meals?", "Wifi?", "Where did I say I want to sit?")]
    assert answers[0] == "Noted: a window seat."
    assert answers[-1].startswith("I don't know")  # the window message was trimmed before the question
    assert len(graph.get_state(config).values["messages"]) == 4
    assert len(list(graph.get_state_history(config))) == 12


def test_storage_counts_on_postgres():
    with postgres_server() as pg, PostgresSaver.from_conn_string(pg.url) as saver:
        saver.setup()
        graph = build_chat_graph(saver)
        for text in ("Window seat, please.", "Meals?"):
            say(graph, "t", text)
        assert stored_rows(saver.conn, "t") == {"checkpoints": 6, "checkpoint_blobs": 6, "checkpoint_writes": 6}
        assert stored_message_copies(saver.conn, saver.serde, "t") == 1 + 2 + 3 + 4
        with pytest.raises(ValueError):
            stored_rows(saver.conn, "t", tables=("pg_user",))
        saver.delete_thread("t")
        assert stored_rows(saver.conn, "t") == {"checkpoints": 0, "checkpoint_blobs": 0, "checkpoint_writes": 0}
    assert leftover_server_processes() == []
