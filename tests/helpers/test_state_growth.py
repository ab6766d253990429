"""helpers.state_growth: trimming, summaries and references keep the state small; storage on a real PostgreSQL."""

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.store.memory import InMemoryStore

from helpers.servers import leftover_server_processes, postgres_server
from helpers.state_growth import (
    build_fare_rules_graph,
    build_summarizing_chat_graph,
    build_trimming_chat_graph,
    fare_rules,
    messages_to_remove,
    stored_bytes,
    stored_message_copies,
    stored_rows,
    summarize,
)
from helpers.travel_graphs import build_chat_graph, say

TEXTS = ("Window seat, please.", "Meals?", "Wifi?", "Where did I say I want to sit?")


def test_messages_to_remove_keeps_the_newest():
    messages = [HumanMessage("a", id="1"), AIMessage("b", id="2"), HumanMessage("c", id="3")]
    assert [r.id for r in messages_to_remove(messages, 1)] == ["1", "2"]
    assert messages_to_remove(messages, 5) == []
    assert [r.id for r in messages_to_remove(messages, 0)] == ["1", "2", "3"]
    with pytest.raises(ValueError):
        messages_to_remove(messages, -1)


def test_trimming_graph_bounds_state_not_history():
    graph = build_trimming_chat_graph(InMemorySaver(), keep=4)
    config = {"configurable": {"thread_id": "t"}}
    answers = [say(graph, "t", text) for text in TEXTS]
    assert answers[0] == "Noted: a window seat."
    assert answers[-1].startswith("I don't know")  # the window message was trimmed before the question
    assert len(graph.get_state(config).values["messages"]) == 4
    assert len(list(graph.get_state_history(config))) == 12


def test_summarize_keeps_statements_only():
    old = [HumanMessage("Window seat, please."), AIMessage("Noted."), HumanMessage("Meals?")]
    assert summarize("", old) == "Window seat, please."
    assert summarize("Vegetarian.", old) == "Vegetarian. Window seat, please."
    assert summarize("", []) == ""


def test_summarizing_graph_bounds_the_state_and_remembers():
    graph = build_summarizing_chat_graph(InMemorySaver(), keep=4)
    config = {"configurable": {"thread_id": "s"}}
    answers = [say(graph, "s", text) for text in TEXTS]
    assert answers[-1] == "You asked for a window seat."  # read from the summary, the message itself is gone
    values = graph.get_state(config).values
    assert len(values["messages"]) == 4
    assert values["summary"] == "Window seat, please."
    assert len(list(graph.get_state_history(config))) == 12


def test_fare_rules_are_deterministic_and_large():
    assert fare_rules("PEK-SFO") == fare_rules("PEK-SFO") != fare_rules("PEK-LHR")
    assert 100_000 < len(fare_rules("PEK-SFO").encode()) < 150_000


def test_rules_graph_answers_the_same_from_state_or_store():
    store = InMemoryStore()
    in_state = build_fare_rules_graph(InMemorySaver())
    in_store = build_fare_rules_graph(InMemorySaver(), store=store)
    config = {"configurable": {"thread_id": "r"}}
    a = in_state.invoke({"route": "PEK-SFO", "question": "refund"}, config)
    b = in_store.invoke({"route": "PEK-SFO", "question": "refund"}, config)
    assert a["answer"] == b["answer"] and a["answer"].endswith("rules mention 'refund'")
    assert "rules" in a and "rules_key" not in a
    assert b["rules_key"] == "PEK-SFO-rules" and "rules" not in b
    assert store.get(("fare-rules",), "PEK-SFO-rules").value["text"] == fare_rules("PEK-SFO")


def test_storage_counts_on_postgres():
    with postgres_server() as pg, PostgresSaver.from_conn_string(pg.url) as saver:
        saver.setup()
        graph = build_chat_graph(saver)
        for text in ("Window seat, please.", "Meals?"):
            say(graph, "t", text)
        assert stored_rows(saver.conn, "t") == {"checkpoints": 6, "checkpoint_blobs": 6, "checkpoint_writes": 6}
        assert stored_message_copies(saver.conn, saver.serde, "t") == 1 + 2 + 3 + 4
        sizes = stored_bytes(saver.conn, "t")
        assert set(sizes) == {"checkpoints", "checkpoint_blobs", "checkpoint_writes"}
        assert all(n > 0 for n in sizes.values())
        rules = build_fare_rules_graph(saver)
        rules.invoke({"route": "PEK-SFO", "question": "fee"}, {"configurable": {"thread_id": "r"}})
        # the document is inline in the two checkpoints after the fetch, and in the fetch's write
        assert 3 <= sum(stored_bytes(saver.conn, "r").values()) / len(fare_rules("PEK-SFO").encode()) < 3.5
        with pytest.raises(ValueError):
            stored_rows(saver.conn, "t", tables=("pg_user",))
        with pytest.raises(ValueError):
            stored_bytes(saver.conn, "t", tables=("pg_user",))
        saver.delete_thread("t")
        assert stored_rows(saver.conn, "t") == {"checkpoints": 0, "checkpoint_blobs": 0, "checkpoint_writes": 0}
        assert stored_bytes(saver.conn, "t") == {"checkpoints": 0, "checkpoint_blobs": 0, "checkpoint_writes": 0}
    assert leftover_server_processes() == []
