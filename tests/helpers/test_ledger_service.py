"""ChatService: the ledger in front of a real graph on SqliteSaver (chapter 10)."""

from pathlib import Path

import pytest

from helpers.ledger import CRASH_POINTS, ConversationNotFound, InvalidId, PayloadMismatch, new_command_id
from helpers.ledger_service import (ChatService, crash_then_restart, run_together, status_counts,
                                    table_counts)

WINDOW = {"kind": "message", "message_id": "m-1", "text": "I prefer a window seat"}


@pytest.fixture
def service(tmp_path: Path):
    with ChatService(tmp_path / "api") as svc:
        svc.open_conversation("acme", "conv-1")
        yield svc


def test_retry_returns_the_stored_answer_and_runs_once(service: ChatService) -> None:
    key = new_command_id()
    first = service.handle("acme", key, "conv-1", WINDOW)
    retry = service.handle("acme", key, "conv-1", WINDOW)
    assert (first.created, first.status) == (True, "done")
    assert (retry.created, retry.answer) == (False, first.answer)
    assert first.answer == "Noted: a window seat. (reply #1)"
    assert service.calls["reply"] == 1


def test_regenerate_forks_from_before_the_last_answer(service: ChatService) -> None:
    service.handle("acme", new_command_id(), "conv-1", WINDOW)
    again = service.handle("acme", new_command_id(), "conv-1", {"kind": "regenerate"})
    assert again.answer == "Noted: a window seat. (reply #2)"
    config = service.thread_config("acme", "conv-1")
    history = list(service.graph.get_state_history(config))
    assert [s.metadata["source"] for s in history].count("fork") == 1
    assert len(service.graph.get_state(config).values["messages"]) == 2


def test_same_key_other_payload_is_rejected_and_nothing_runs(service: ChatService) -> None:
    key = new_command_id()
    service.handle("acme", key, "conv-1", WINDOW)
    with pytest.raises(PayloadMismatch):
        service.handle("acme", key, "conv-1", {**WINDOW, "text": "aisle"})
    assert service.calls["reply"] == 1


def test_foreign_conversation_and_hostile_ids_write_nothing(service: ChatService) -> None:
    service.open_conversation("globex", "conv-g")
    before = table_counts(service.directory / "ledger.db")
    with pytest.raises(ConversationNotFound):
        service.handle("globex", new_command_id(), "conv-1", WINDOW)
    with pytest.raises(InvalidId):
        service.handle("acme", "x'; DROP TABLE commands;--", "conv-1", WINDOW)
    with pytest.raises(ValueError):
        service.handle("acme", new_command_id(), "conv-1", {"kind": "delete everything"})
    assert table_counts(service.directory / "ledger.db") == before
    assert service.calls["reply"] == 0


def test_threads_racing_one_key_make_one_command_and_one_run(service: ChatService) -> None:
    key = new_command_id()
    results = run_together(12, lambda: service.handle("acme", key, "conv-1", WINDOW))
    assert not [r for r in results if isinstance(r, Exception)]
    assert sum(r.created for r in results) == 1
    assert service.calls["reply"] == 1
    assert status_counts(service.directory / "ledger.db") == {"commands": {"done": 1}, "outbox_pending": 0}


def test_fifo_second_command_waits_for_the_first(service: ChatService) -> None:
    a, b = new_command_id(), new_command_id()
    service.ledger.submit("acme", a, "conv-1", WINDOW)
    service.ledger.submit("acme", b, "conv-1", {"kind": "message", "message_id": "m-2", "text": "Which seat do I prefer?"})
    queue: list = []
    assert [d.command_id for d in service.ledger.dispatch_pending(queue.append)] == [a]
    service.work(queue.pop())
    assert [d.command_id for d in service.ledger.dispatch_pending(queue.append)] == [b]
    service.work(queue.pop())
    assert service.ledger.get_command("acme", b).result["answer"] == "You asked for a window seat. (reply #2)"


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_every_crash_point_ends_with_one_run(point: str, tmp_path: Path) -> None:
    row = crash_then_restart(point, directory=tmp_path)
    assert row["crashed"] and row["reply_runs"] == 1 and row["status"] == "done" and row["retry_got_answer"]
    assert row["deliveries"] == (2 if point == "before_mark_done" else 1)
    assert row["deduplicated"] == (1 if point == "before_mark_done" else 0)


def test_naive_receiver_runs_twice_after_redelivery() -> None:
    assert crash_then_restart("before_mark_done", dedupe=False)["reply_runs"] == 2


def test_redelivery_of_an_unfinished_run_resumes_it(service: ChatService) -> None:
    """A run whose checkpoints stop half-way is resumed, not started again."""
    key = new_command_id()
    service.ledger.submit("acme", key, "conv-1", WINDOW)
    queue: list = []
    service.ledger.dispatch_pending(queue.append)
    delivery = queue.pop()
    config = service.thread_config("acme", "conv-1")
    tagged = {"configurable": {**config["configurable"], "ledger_run_id": delivery.run_id}}
    from langchain_core.messages import HumanMessage
    service.graph.invoke({"messages": [HumanMessage("I prefer a window seat", id="m-1")]}, tagged,
                         interrupt_before=["reply"])  # stands in for a crash before reply
    assert service.calls["reply"] == 0
    service.work(delivery)
    assert service.calls["reply"] == 1
    assert len(service.graph.get_state(config).values["messages"]) == 2


def test_crash_table_runs_every_point_in_one_directory() -> None:
    from helpers.ledger_service import crash_table

    rows = crash_table(CRASH_POINTS)
    assert [r["crash_at"] for r in rows] == list(CRASH_POINTS)
    assert all(r["reply_runs"] == 1 and r["retry_got_answer"] for r in rows)
    assert sum(r["deliveries"] for r in rows) == len(CRASH_POINTS) + 1
