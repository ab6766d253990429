"""helpers.business_ids: uuid properties, PII footprints, runtime IDs, the loopback API, the acceptance table."""

import os
import sqlite3
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from helpers import business_ids as ids


def test_uuid_properties_rows() -> None:
    rows = {r["kind"]: r for r in ids.uuid_properties()}
    assert [rows[k]["version"] for k in ("uuid4", "uuid7", "uuid5")] == [4, 7, 5]
    assert [rows[k]["random_bits"] for k in ("uuid4", "uuid7", "uuid5")] == [122, 74, 0]  # measured
    assert rows["uuid7"]["sorted_by_creation"] and rows["uuid7"]["embeds_time"]
    assert not rows["uuid4"]["sorted_by_creation"] and not rows["uuid4"]["same_input_same_id"]
    assert rows["uuid5"]["same_input_same_id"]


def test_uuid7_burst_runs_ahead_of_the_clock() -> None:
    burst = ids.uuid7_burst(5000)
    assert burst["distinct"] and burst["sorted"]
    assert burst["last_ahead_ms"] > 2000  # 5,000 IDs in far less than 3 s: each took its own millisecond


def test_uuid7_paced_lead_grows_above_one_per_millisecond_and_restores_uuid6() -> None:
    import uuid6

    before = (uuid6.time, uuid6._last_v7_timestamp)
    assert ids.uuid7_paced_lead(1_000) == [0, 0]      # one ID per millisecond: never ahead
    assert ids.uuid7_paced_lead(5_000) == [4_000, 8_000]  # 5,000 milliseconds used per second of clock
    assert ids.uuid7_paced_lead(2_000, seconds=3) == [1_000, 2_000, 3_000]
    assert (uuid6.time, uuid6._last_v7_timestamp) == before


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
    graph = ids.build_hold_graph(InMemorySaver(), lambda command_id, effect, info: f"{command_id}:{effect}", log,
                                 fail={"hold_outbound": 1})
    graph.invoke({"holds": []}, {"configurable": {"thread_id": "t", "command_id": "R1"}})
    out = [r for r in log if r["node"] == "hold_outbound"]
    back = [r for r in log if r["node"] == "hold_return"]
    assert [r["attempt"] for r in out] == [1, 2] and {r["key"] for r in out} == {"R1:hold_outbound"}
    assert back[0]["key"] == "R1:hold_return" and out[0]["task_id"] != back[0]["task_id"]
    assert out[0]["run_id"] is None and out[0]["command_id"] == "R1"


def test_hold_graph_without_retry_raises_transient_error() -> None:
    graph = ids.build_hold_graph(InMemorySaver(), lambda *a: None, [], fail={"hold_outbound": 1}, retry=False,
                                 parallel=False)
    with pytest.raises(ids.TransientError):
        graph.invoke({"holds": []}, {"configurable": {"thread_id": "t"}})
    assert graph.invoke(None, {"configurable": {"thread_id": "t"}}) == {"holds": ["hold_outbound"]}


def test_a_real_crash_inside_the_hold_changes_the_task_id(tmp_path: Path) -> None:
    before, after = ids.crash_inside_hold(tmp_path, "0b4b7c53-7c6d-5b0c-a5c8-3d2f1e0a9b8c")
    assert before.thread_id == after.thread_id == "trip-crash"
    assert before.task_id != after.task_id  # the checkpoint it was planned from was never saved
    assert before.run_id != after.run_id  # LangGraph's run_id: one per invocation


def test_without_os_fork_the_crash_runs_in_a_fresh_interpreter(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delattr(os, "fork")  # as on Windows: no fork of this process, no process server
    before, after = ids.crash_inside_hold(tmp_path, "0b4b7c53-7c6d-5b0c-a5c8-3d2f1e0a9b8c")
    assert before.thread_id == after.thread_id == "trip-crash" and before.task_id != after.task_id


def test_label_values_in_order_of_first_appearance() -> None:
    assert ids.label_values(["b", "a", "b", None], "T") == {None: "-", "b": "T1", "a": "T2"}


def test_open_commands_table_autocommits(tmp_path: Path) -> None:
    from helpers.ledger.experiments import open_commands_table  # chapter 11's acceptance exercise

    conn = open_commands_table(tmp_path / "c.db")
    conn.execute("INSERT INTO commands VALUES ('t', 'c', 'f')")
    other = sqlite3.connect(tmp_path / "c.db")
    assert other.execute("SELECT COUNT(*) FROM commands").fetchone() == (1,)
    other.close()
    conn.close()


def test_loopback_api_answers_in_arrival_order_and_survives_a_client_that_hung_up() -> None:
    import http.client
    import json
    import urllib.request
    from urllib.parse import urlsplit

    seen: list = []
    api = ids.LoopbackApi(lambda body: seen.append(body["n"]) or {"n": body["n"], "count": len(seen)})
    try:
        parts = urlsplit(api.url)
        gone = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
        gone.request("POST", parts.path, json.dumps({"n": 1}), {"Content-Type": "application/json"})
        gone.close()  # hangs up before the answer, like a reloaded page
        request = urllib.request.Request(api.url, json.dumps({"n": 2}).encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5) as response:
            assert json.loads(response.read()) == {"n": 2, "count": 2}
        assert seen == [1, 2] and api.received == 2
    finally:
        assert api.close()
