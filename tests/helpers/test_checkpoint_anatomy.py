"""helpers.checkpoint_anatomy: structural views of checkpoints and of a SqliteSaver file."""

import sqlite3
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from helpers.checkpoint_anatomy import (
    blob_rows,
    checkpoint_rows,
    decode_checkpoint_blob,
    describe_timestamp,
    implemented_methods,
    label_config,
    measure_calls,
    rows_per_thread,
    snapshot_rows,
    sqlite_columns,
    sqlite_tables,
    stored_checkpoints,
    stored_writes,
    trigger_rows,
    version_parts,
    version_rows,
    versions_seen_rows,
)
from helpers.checkpoints import checkpoint_id, label_ids
from helpers.counting_saver import CountingSaver
from helpers.travel_graphs import build_chat_graph, say

CONFIG = {"configurable": {"thread_id": "t"}}


@pytest.fixture()
def two_turns():
    saver = InMemorySaver()
    graph = build_chat_graph(saver)
    say(graph, "t", "I'd like a window seat, please.")
    say(graph, "t", "Which seat did I ask for?")
    labels = label_ids(checkpoint_id(s.config) for s in graph.get_state_history(CONFIG))
    return saver, graph, labels


@pytest.fixture()
def sqlite_file(tmp_path):
    path = tmp_path / "c.db"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        graph = build_chat_graph(saver)
        say(graph, "a", "I'd like a window seat, please.")
        say(graph, "a", "Which seat did I ask for?")
        say(graph, "b", "An aisle seat, please.")
        serde = saver.serde
    return path, serde


def test_version_parts():
    assert version_parts("00000000000000000000000000000006.0.0035") == {
        "counter": 6, "random part": True, "counter digits": 32}
    assert version_parts("0007") == {"counter": 7, "random part": False, "counter digits": 4}
    assert version_parts(3) == {"counter": 3, "random part": False}
    with pytest.raises(TypeError):
        version_parts(None)
    with pytest.raises(ValueError):
        version_parts("abc.1")


def test_real_versions_have_a_counter_and_a_random_part(two_turns):
    saver, _graph, _labels = two_turns
    rows = version_rows(saver.get_tuple(CONFIG).checkpoint["channel_versions"])
    assert [r["channel"] for r in rows] == ["__start__", "branch:to:reply", "messages"]
    assert [r["counter"] for r in rows] == [5, 6, 6]
    assert all(r["random part"] and r["digits"] == 32 for r in rows)
    seen = versions_seen_rows(saver.get_tuple(CONFIG).checkpoint["versions_seen"])
    assert {(r["node"], r["channel"], r["counter seen"]) for r in seen} == {
        ("__start__", "__start__", 4), ("reply", "branch:to:reply", 5)}


def test_snapshot_and_checkpoint_rows_hide_ids_and_times(two_turns):
    saver, graph, labels = two_turns
    snap_rows = {r["field"]: r["content"] for r in snapshot_rows(graph.get_state(CONFIG), labels)}
    assert list(snap_rows) == list(graph.get_state(CONFIG)._fields)
    assert "'checkpoint_id': 'C5'" in snap_rows["config"] and "'checkpoint_id': 'C4'" in snap_rows["parent_config"]
    assert snap_rows["created_at"] == "str, ISO-8601, tz=UTC"
    ck_rows = {r["key"]: r["content"] for r in checkpoint_rows(saver.get_tuple(CONFIG).checkpoint, labels)}
    assert ck_rows["v"] == "4" and ck_rows["id"] == "uuid6 string, label C5"
    assert "-" not in "".join(snap_rows.values()).replace("ISO-8601", "")  # no uuid fragments


def test_describe_timestamp_and_label_config():
    assert describe_timestamp("2026-01-02T03:04:05+00:00") == "str, ISO-8601, tz=UTC"
    assert describe_timestamp("2026-01-02T03:04:05") == "str, ISO-8601, tz=none"
    assert describe_timestamp(None).startswith("NoneType")
    assert label_config(None, {}) is None
    assert label_config({"configurable": {"thread_id": "x", "checkpoint_id": "zz"}}, {}) == {
        "thread_id": "x", "checkpoint_id": "<unlabelled id>"}


def test_trigger_rows_explain_when_reply_is_pending(two_turns):
    _saver, graph, _labels = two_turns
    rows = trigger_rows(graph, CONFIG, node="reply", channel="branch:to:reply")
    assert [r["reply in next"] for r in rows] == [False, True, False, False, True, False]
    assert [r["holds a value"] for r in rows] == [False, True, False, False, True, False]
    assert [r["branch:to:reply counter"] for r in rows] == ["-", 2, 3, 3, 5, 6]


def test_measure_calls_resets_and_consumes_iterators():
    counting = CountingSaver(InMemorySaver())
    graph = build_chat_graph(counting)
    rows = measure_calls(counting, {
        "turn": lambda: say(graph, "t", "hello"),
        "history": lambda: graph.get_state_history(CONFIG),  # lazy: must be consumed
    })
    assert rows[0] == {"operation": "turn", "get_tuple": 1, "list": 0, "put": 3, "put_writes": 2, "delete_thread": 0}
    assert rows[1]["list"] == 1 and rows[1]["put"] == 0
    counting.delete_thread("t")
    rows = measure_calls(counting, {"turn": lambda: say(graph, "t", "hello")},
                         methods=("put", "get_next_version", "prune"))
    assert rows == [{"operation": "turn", "put": 3, "get_next_version": 3, "prune": 0}]


def test_blob_rows_show_one_blob_per_changed_channel_version(two_turns):
    saver, _graph, _labels = two_turns
    rows = blob_rows(saver, "t")
    assert [r["label"] for r in rows] == [f"C{i}" for i in range(6)]
    assert rows[0]["new blobs"] == "__start__@1 (the input)"
    assert rows[1]["new blobs"] == ("__start__@2 (no value), branch:to:reply@2 (a trigger), "
                                    "messages@2 (1 message)")
    assert rows[3]["reused from an earlier checkpoint"] == "branch:to:reply@3, messages@3"
    assert rows[5]["new blobs"].endswith("messages@6 (4 messages)")
    new = sum(r["new blobs"].count("@") for r in rows)
    assert new == len(saver.blobs) == 12


def test_implemented_methods_compare_with_the_base_class():
    class Partial(InMemorySaver):
        def prune(self, thread_ids, *, strategy="keep_latest"):
            return None

    rows = implemented_methods([InMemorySaver, SqliteSaver, Partial], ("put", "prune", "copy_thread"))
    assert rows == [
        {"method": "put", "InMemorySaver": "yes", "SqliteSaver": "yes", "Partial": "yes"},
        {"method": "prune", "InMemorySaver": "-", "SqliteSaver": "-", "Partial": "yes"},
        {"method": "copy_thread", "InMemorySaver": "-", "SqliteSaver": "-", "Partial": "-"},
    ]


def test_sqlite_views(sqlite_file):
    path, serde = sqlite_file
    assert sqlite_tables(path) == ["checkpoints", "writes"]
    columns = {(r["table"], r["column"]) for r in sqlite_columns(path)}
    assert ("writes", "task_path") in columns and ("checkpoints", "metadata") in columns
    stored = stored_checkpoints(path, "a")
    assert [r["label"] for r in stored] == [f"C{i}" for i in range(6)]
    assert stored[0]["parent"] == "-" and stored[1]["parent"] == "C0"
    assert stored[3]["metadata (JSON)"] == '{"parents": {}, "source": "input", "step": 2}'
    assert {r["type"] for r in stored} == {"msgpack"}
    writes = stored_writes(path, "a")
    assert [(w["checkpoint"], w["channel"]) for w in writes][:3] == [
        ("C0", "messages"), ("C0", "branch:to:reply"), ("C1", "messages")]
    blob = decode_checkpoint_blob(serde, path, "a")
    assert blob["type column"] == "msgpack" and blob["messages inside"] == 4 and "channel_versions" in blob["keys"]
    assert rows_per_thread(path) == [
        {"table": "checkpoints", "thread_id": "a", "rows": 6}, {"table": "checkpoints", "thread_id": "b", "rows": 3},
        {"table": "writes", "thread_id": "a", "rows": 6}, {"table": "writes", "thread_id": "b", "rows": 3}]


def test_sqlite_views_open_read_only(sqlite_file):
    path, _serde = sqlite_file
    before = Path(path).read_bytes()
    sqlite_tables(path), sqlite_columns(path), rows_per_thread(path)
    assert Path(path).read_bytes() == before
    with pytest.raises(sqlite3.OperationalError):
        from helpers.checkpoint_anatomy import _connect

        _connect(path).execute("DELETE FROM checkpoints")
