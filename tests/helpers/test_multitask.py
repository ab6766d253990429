"""helpers.multitask against a real local Agent Server, and the facts chapter 13's checks rely on.

One server for the module (each run on the in-memory server waits ~0.5-1 s in its queue,
so the tests keep the number of runs small). Nothing may be left running afterwards.
"""

from collections.abc import Iterator

import pytest
from langgraph_sdk import get_sync_client

from helpers.appendix_graphs import GATED_GRAPH_SPEC, RETRIED_GRAPH_SPEC, open_gate
from helpers.checks.chapter_13 import EXPECTED_RUNS_LEFT, EXPECTED_SURVIVES
from helpers.multitask import (
    DELETED,
    REFUSED,
    STRATEGIES,
    busy_thread_experiment,
    busy_thread_experiments,
    run_status,
    wait_until_running,
)
from helpers.servers import agent_server, leftover_server_processes
from helpers.worker_faults import node_starts


@pytest.fixture(scope="module")
def client() -> Iterator[object]:
    with agent_server({"gated": GATED_GRAPH_SPEC, "retried": RETRIED_GRAPH_SPEC}) as server:
        yield get_sync_client(url=server.url)
    assert leftover_server_processes() == []


EXPECTED_TWO_RUNS = {  # what chapter 13's table shows
    "reject": {"statuses": ("success", REFUSED), "runs listed": 1, "survived": ("first",), "checkpoints": 3},
    "enqueue": {"statuses": ("success", "success"), "runs listed": 2, "survived": ("first", "second"),
                "checkpoints": 6},
    "interrupt": {"statuses": ("interrupted", "success"), "runs listed": 2, "survived": ("second",),
                  "checkpoints": 5},
    "rollback": {"statuses": (DELETED, "success"), "runs listed": 1, "survived": ("second",), "checkpoints": 3},
}


# "running" alone comes before the graph's first checkpoint (the runtime sets it when a
# worker takes the run): an interrupt sent then would cancel a run with nothing saved.
def test_wait_until_running_returns_once_the_node_waits_with_its_checkpoints_saved(client, tmp_path):
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, "gated", input={"gate": str(tmp_path), "label": "x"})
    try:
        wait_until_running(client, run)
        assert run_status(client, run) == "running"
        assert [h["next"] for h in client.threads.get_history(thread_id)] == [["wait_at_gate"], ["__start__"]]
    finally:
        open_gate(tmp_path)
        client.runs.join(thread_id, run["run_id"])


def test_run_status_of_a_refused_run_needs_no_server():
    assert run_status(object(), None) == REFUSED


# Pipelined (the next experiment queues while the current one holds the server's single
# worker): the same rows as one by one, in about half the time.
def test_two_runs_per_strategy_give_chapter_13s_table(client, tmp_path):
    rows = busy_thread_experiments(client, STRATEGIES, tmp_path)
    assert rows == [{"strategy": s, **EXPECTED_TWO_RUNS[s]} for s in STRATEGIES]


def test_three_runs_match_what_exercise_13_1_expects(client, tmp_path):
    rows = busy_thread_experiments(client, STRATEGIES, tmp_path, labels=("A", "B", "C"))
    for row in rows:
        assert list(row["survived"]) == EXPECTED_SURVIVES[row["strategy"]], row
        assert row["runs listed"] == EXPECTED_RUNS_LEFT[row["strategy"]], row


def test_one_experiment_alone_gives_the_same_row_as_pipelined(client, tmp_path):
    row = busy_thread_experiment(client, "interrupt", tmp_path)
    assert row == {"strategy": "interrupt", **EXPECTED_TWO_RUNS["interrupt"]}


# Chapter 13's worker that goes away, and exercise 13.2's model of a retry: the same run is
# handed out again (attempt 2), keeps its run_id, and resumes after the node that finished.
def test_a_run_whose_worker_goes_away_once_is_retried_as_the_same_run(client, tmp_path):
    thread_id = client.threads.create()["thread_id"]
    log = tmp_path / "starts.log"
    parts = list(client.runs.stream(thread_id, "retried", input={"log": str(log), "cut_off": 1},
                                    stream_mode="updates"))
    metadata = [part.data for part in parts if part.event == "metadata"]
    assert [m["attempt"] for m in metadata] == [1, 2]
    assert metadata[0]["run_id"] == metadata[1]["run_id"]
    assert [run["status"] for run in client.runs.list(thread_id)] == ["success"]
    assert node_starts(log) == {"charge_card": 2, "hold_seat": 1}
    attempts = [h["metadata"]["run_attempt"] for h in reversed(client.threads.get_history(thread_id))]
    assert attempts == [1, 1, 1, 2]
