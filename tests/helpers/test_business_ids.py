"""helpers.business_ids: uuid properties, PII footprints, runtime IDs, exercise 10.1's table."""

import sqlite3
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from helpers import business_ids as ids


def test_uuid_properties_rows() -> None:
    rows = {r["kind"]: r for r in ids.uuid_properties()}
    assert [rows[k]["version"] for k in ("uuid4", "uuid7", "uuid5")] == [4, 7, 5]
    assert rows["uuid7"]["sorted_by_creation"] and rows["uuid7"]["embeds_time"]
    assert not rows["uuid4"]["sorted_by_creation"] and not rows["uuid4"]["same_input_same_id"]
    assert rows["uuid5"]["same_input_same_id"] and rows["uuid5"]["random_bits"] == 0


def test_pii_footprint_counts_text_and_blob_columns(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (k TEXT, v BLOB, n INTEGER)")
        conn.execute("INSERT INTO t VALUES ('a:ana@example.com', ?, 1)", (b'{"e":"ana@example.com"}',))
        conn.execute("INSERT INTO t VALUES ('b', x'00', 2)")
    conn.close()
    assert ids.pii_footprint(path, "ana@example.com") == [
        {"table": "t", "column": "k", "rows": 1}, {"table": "t", "column": "v", "rows": 1}]
    assert ids.pii_footprint(path, "nobody") == []


def test_hold_graph_logs_retries_and_distinct_tasks() -> None:
    log: list = []
    graph = ids.build_hold_graph(InMemorySaver(), lambda info: info.task_id, log, fail={"hold_outbound": 1})
    graph.invoke({"holds": []}, {"configurable": {"thread_id": "t"}})
    out = [r for r in log if r["node"] == "hold_outbound"]
    back = [r for r in log if r["node"] == "hold_return"]
    assert [r["attempt"] for r in out] == [1, 2] and len({r["key"] for r in out}) == 1
    assert out[0]["key"] != back[0]["key"] and out[0]["run_id"] is None


def test_hold_graph_without_retry_raises_transient_error() -> None:
    graph = ids.build_hold_graph(InMemorySaver(), str, [], fail={"hold_outbound": 1}, retry=False, parallel=False)
    with pytest.raises(ids.TransientError):
        graph.invoke({"holds": []}, {"configurable": {"thread_id": "t"}})
    assert graph.invoke(None, {"configurable": {"thread_id": "t"}}) == {"holds": ["hold_outbound"]}


def test_label_values_in_order_of_first_appearance() -> None:
    assert ids.label_values(["b", "a", "b", None], "T") == {None: "-", "b": "T1", "a": "T2"}


def test_open_commands_table_autocommits(tmp_path: Path) -> None:
    conn = ids.open_commands_table(tmp_path / "c.db")
    conn.execute("INSERT INTO commands VALUES ('t', 'c', 'f')")
    other = sqlite3.connect(tmp_path / "c.db")
    assert other.execute("SELECT COUNT(*) FROM commands").fetchone() == (1,)
    other.close()
    conn.close()
