"""What a PostgreSQL port of the ledger must change, shown on chapter 12's throwaway server.

Chapter 11 states these results in prose (starting a server costs more than the chapter's
time budget) and names the test that proves each; this module is their proof.
"""

from __future__ import annotations

import pytest

from helpers import servers
from helpers.ledger import postgres_port


@pytest.fixture(scope="module")
def facts():
    with servers.postgres_server() as pg:
        yield postgres_port.postgres_port_facts(pg.url)


def test_a_smaller_seq_commits_after_a_claim_saw_a_larger_one(facts: dict) -> None:
    assert facts["claim_cursor"] == 2 and facts["below_cursor"] == ["K1"]  # a cursor would skip K1 for ever


def test_insert_first_losers_get_40001_under_repeatable_read_only(facts: dict) -> None:
    assert facts["insert_first"] == {"READ COMMITTED": 0, "REPEATABLE READ": "SQLSTATE 40001"}
    assert facts["rows"] == 5  # K1, K2 and one row per loser: never a duplicate


def test_a_repeatable_read_snapshot_starts_at_the_first_query_not_at_begin(facts: dict) -> None:
    assert facts["snapshot_at_first_query"] == 0  # only SET TRANSACTION before the winner: the loser sees its row


def test_under_read_committed_a_queue_sweep_strands_a_command_behind_a_finished_head(facts: dict) -> None:
    race = facts["queue_race"]["READ COMMITTED"]
    assert race["failed"] == []
    assert race["rows"] == [("K1", "done", 0), ("K2", "accepted", 0)]  # behind a head that is gone: no claim finds it


def test_serializable_fails_the_sweep_and_its_retry_makes_the_head(facts: dict) -> None:
    race = facts["queue_race"]["SERIALIZABLE"]
    assert race["failed"] == ["queuer: SQLSTATE 40001"]
    assert race["rows"] == [("K1", "done", 0), ("K2", "accepted", 1)]


def test_locking_the_thread_first_serializes_the_two_and_the_head_is_made(facts: dict) -> None:
    race = facts["queue_race"]["thread lock"]
    assert race["failed"] == ["finisher: SQLSTATE 55P03"]  # NOWAIT: it would have waited for the sweep
    assert race["rows"] == [("K1", "done", 0), ("K2", "accepted", 1)]


def test_under_read_committed_a_sweep_by_state_strands_a_command_accepted_between_its_statements(facts: dict) -> None:
    race = facts["sweep_race"]
    assert race["statements"] == [("K1", "t", 1), ("K3", "u", 0)]  # u has no head: no claim finds K3
    assert race["REPEATABLE READ"] == [("K1", "t", 1), ("K3", "u", None)]  # one snapshot: K3 waits for the next sweep
    assert race["selected seqs"] == [("K1", "t", 1), ("K3", "u", None)]  # only the selected seqs change
