"""What a PostgreSQL port of the ledger must change, shown on chapter 12's throwaway server.

Chapter 11 states these results in prose (starting a server costs more than the chapter's
time budget); this test is their proof.
"""

from __future__ import annotations

import pytest

from helpers import servers
from helpers.ledger import experiments


@pytest.fixture(scope="module")
def facts():
    with servers.postgres_server() as pg:
        yield experiments.postgres_port_facts(pg.url)


def test_a_smaller_seq_commits_after_a_claim_saw_a_larger_one(facts: dict) -> None:
    assert facts["claim_cursor"] == 2 and facts["below_cursor"] == ["K1"]  # a cursor would skip K1 for ever


def test_insert_first_losers_get_40001_under_repeatable_read_only(facts: dict) -> None:
    assert facts["insert_first"] == {"READ COMMITTED": 0, "REPEATABLE READ": "SQLSTATE 40001"}
    assert facts["rows"] == 4  # K1, K2 and one row per isolation level: never a duplicate
