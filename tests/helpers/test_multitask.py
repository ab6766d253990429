"""helpers.multitask against a real local Agent Server, and the facts chapter 12's checks rely on.

One server for the module (each run on the in-memory server waits ~0.5-1 s in its queue,
so the tests keep the number of runs small). Nothing may be left running afterwards.
"""

from collections.abc import Iterator

import pytest
from langgraph_sdk import get_sync_client

from helpers.appendix_graphs import GATED_GRAPH_SPEC
from helpers.checks.chapter_12 import EXPECTED_RUNS_LEFT, EXPECTED_SURVIVES
from helpers.multitask import DELETED, REFUSED, STRATEGIES, busy_thread_experiment, busy_thread_experiments, run_status
from helpers.servers import agent_server, leftover_server_processes


@pytest.fixture(scope="module")
def client() -> Iterator[object]:
    with agent_server({"gated": GATED_GRAPH_SPEC}) as server:
        yield get_sync_client(url=server.url)
    assert leftover_server_processes() == []


EXPECTED_TWO_RUNS = {  # what chapter 12's table shows
    "reject": {"statuses": ("success", REFUSED), "runs listed": 1, "survived": ("first",), "checkpoints": 3},
    "enqueue": {"statuses": ("success", "success"), "runs listed": 2, "survived": ("first", "second"),
                "checkpoints": 6},
    "interrupt": {"statuses": ("interrupted", "success"), "runs listed": 2, "survived": ("second",),
                  "checkpoints": 5},
    "rollback": {"statuses": (DELETED, "success"), "runs listed": 1, "survived": ("second",), "checkpoints": 3},
}


def test_run_status_of_a_refused_run_needs_no_server():
    assert run_status(object(), None) == REFUSED


# Pipelined (the next experiment queues while the current one holds the server's single
# worker): the same rows as one by one, in about half the time.
def test_two_runs_per_strategy_give_chapter_12s_table(client, tmp_path):
    rows = busy_thread_experiments(client, STRATEGIES, tmp_path)
    assert rows == [{"strategy": s, **EXPECTED_TWO_RUNS[s]} for s in STRATEGIES]


def test_three_runs_match_what_exercise_12_1_expects(client, tmp_path):
    rows = busy_thread_experiments(client, STRATEGIES, tmp_path, labels=("A", "B", "C"))
    for row in rows:
        assert list(row["survived"]) == EXPECTED_SURVIVES[row["strategy"]], row
        assert row["runs listed"] == EXPECTED_RUNS_LEFT[row["strategy"]], row


def test_one_experiment_alone_gives_the_same_row_as_pipelined(client, tmp_path):
    row = busy_thread_experiment(client, "interrupt", tmp_path)
    assert row == {"strategy": "interrupt", **EXPECTED_TWO_RUNS["interrupt"]}
