"""Two defects an independent adversarial suite found in the ledger (issue 25), as regressions.

* A delivery whose ``seq`` no SQLite integer can hold raised Python's ``OverflowError``
  instead of the ledger's own ``InvalidDelivery``.
* A heartbeat that renewed after a failed attempt released its lease took the command back
  for a whole lease: ``renew`` matched any unfinished status, and ``deliver`` released while
  its heartbeat still ran. Only a running attempt renews now, and ``deliver`` releases after
  the heartbeat stopped.

And one behaviour it observed, which no docstring promised: ``Ledger(":memory:")`` opened,
then failed later with "no such table" on its second pooled connection. It is refused at once.
"""

from __future__ import annotations

import dataclasses

import pytest

from helpers import ledger


@pytest.fixture
def claimed(tmp_path):
    book = ledger.Ledger(tmp_path / "ledger.db", clock=ledger.ManualClock())
    book.create_conversation("acme", "c1")
    book.submit("acme", "k1", "c1", {"text": "hi"})
    yield book, book.claim()


@pytest.mark.parametrize("seq", [2**63, 10**30, -2**63 - 1])
@pytest.mark.parametrize("call", ["renew", "release", "record_result"])
def test_a_seq_beyond_sqlite_integers_is_an_invalid_delivery(claimed, seq, call):
    book, delivery = claimed
    forged = dataclasses.replace(delivery, seq=seq)
    args = {"renew": (), "release": ("boom",), "record_result": ({"ok": True},)}[call]
    with pytest.raises(ledger.InvalidDelivery):
        getattr(book, call)(forged, *args)
    assert book.renew(delivery)  # nothing was written: the real delivery still holds its lease


def test_a_released_attempt_cannot_renew_its_lease_back(claimed):
    book, delivery = claimed
    assert book.release(delivery, "the provider failed")
    assert book.renew(delivery) is False  # a late heartbeat
    again = book.claim()
    assert again is not None and again.attempt == delivery.attempt + 1


@pytest.mark.parametrize("round_", range(10))
def test_deliver_releases_a_failed_attempt_so_that_the_next_claim_gets_it(tmp_path, round_):
    """With a very fast heartbeat, each failed attempt is claimable at once, until the third is buried."""
    book = ledger.Ledger(tmp_path / "ledger.db", clock=ledger.ManualClock(), max_attempts=3)
    book.create_conversation("acme", "c1")
    book.submit("acme", "k1", "c1", {"text": "hi"})

    def failing(_):
        raise RuntimeError("the provider failed")

    attempts = []
    while (delivery := book.claim()) is not None:
        attempts.append(delivery.attempt)
        assert book.deliver(delivery, failing, renew_every=0.0001) is False
    assert attempts == [1, 2, 3]  # a late beat that re-leased a released attempt made a claim come back empty


@pytest.mark.parametrize("path", [":memory:", "file::memory:?cache=shared", "file:ledger?mode=memory"])
def test_an_in_memory_database_is_refused_with_a_clear_message(path):
    with pytest.raises(ValueError, match="needs a file"):
        ledger.Ledger(path)
