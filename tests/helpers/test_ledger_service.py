"""ChatService and its experiments: the ledger in front of a real graph on SqliteSaver (chapter 11)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from helpers import preloaded_processes
from helpers.ledger import (
    CRASH_POINTS,
    ConversationNotFound,
    InvalidId,
    InvalidPayload,
    PayloadMismatch,
    new_command_id,
)
from helpers.ledger import experiments as lx
from helpers.ledger.service import ChatService, main

WINDOW = {"kind": "message", "message_id": "m-1", "text": "I prefer a window seat"}
QUESTION = {"kind": "message", "message_id": "m-2", "text": "Which seat do I prefer?"}


@pytest.fixture
def service(tmp_path: Path):
    with ChatService(tmp_path / "api") as svc:
        svc.open_conversation("acme", "conv-1")
        yield svc


def test_a_request_only_submits_and_a_dispatcher_runs_it(service: ChatService) -> None:
    key = new_command_id()
    first = service.handle("acme", key, "conv-1", WINDOW)
    assert (first.created, first.status, first.answer) == (True, "accepted", None)
    assert service.calls["reply"] == 0  # nothing ran inside the request
    assert service.dispatch() == 1
    retry = service.handle("acme", key, "conv-1", WINDOW)
    assert (retry.created, retry.status, retry.answer) == (False, "done", "Noted: a window seat. (reply #1)")
    assert service.status("acme", key) == retry
    assert service.dispatch() == 0 and service.calls["reply"] == 1


def test_a_retry_while_the_run_is_going_gets_still_processing(tmp_path: Path) -> None:
    entered, finish = threading.Event(), threading.Event()

    def held() -> None:
        entered.set()
        finish.wait(10)

    with ChatService(tmp_path / "api", model_call=held) as svc:
        svc.open_conversation("acme", "conv-1")
        key = new_command_id()
        svc.handle("acme", key, "conv-1", WINDOW)
        worker = threading.Thread(target=svc.dispatch)
        worker.start()
        assert entered.wait(10)
        busy = svc.handle("acme", key, "conv-1", WINDOW)
        finish.set()
        worker.join(10)
        assert (busy.status, busy.created, busy.answer) == ("running", False, None)
        assert svc.handle("acme", key, "conv-1", WINDOW).status == "done"
        assert svc.calls["reply"] == 1


def test_regenerate_forks_from_before_the_last_answer(service: ChatService) -> None:
    service.handle("acme", new_command_id(), "conv-1", WINDOW)
    service.dispatch()
    key = new_command_id()
    service.handle("acme", key, "conv-1", {"kind": "regenerate"})
    service.dispatch()
    assert service.status("acme", key).answer == "Noted: a window seat. (reply #2)"
    config = service.thread_config("acme", "conv-1")
    history = list(service.graph.get_state_history(config))
    assert [s.metadata["source"] for s in history].count("fork") == 1
    assert len(service.graph.get_state(config).values["messages"]) == 2
    runs = service.ledger.list_runs("acme", "conv-1")
    labels = {s.config["configurable"]["checkpoint_id"]: s for s in history}
    assert runs[0].start_checkpoint_id is None and runs[1].start_checkpoint_id in labels
    assert labels[runs[1].start_checkpoint_id].next == ("reply",)  # the regenerate started at the fork point
    assert runs[1].end_checkpoint_id == service.graph.get_state(config).config["configurable"]["checkpoint_id"]


def test_same_key_other_payload_is_rejected_and_nothing_runs(service: ChatService) -> None:
    key = new_command_id()
    service.handle("acme", key, "conv-1", WINDOW)
    with pytest.raises(PayloadMismatch):
        service.handle("acme", key, "conv-1", {**WINDOW, "text": "aisle"})
    service.dispatch()
    assert service.calls["reply"] == 1


def test_foreign_conversation_and_hostile_ids_write_nothing(service: ChatService) -> None:
    service.open_conversation("globex", "conv-g")
    before = lx.table_counts(service.directory / "ledger.db")
    with pytest.raises(ConversationNotFound):
        service.handle("globex", new_command_id(), "conv-1", WINDOW)
    with pytest.raises(InvalidId):
        service.handle("acme", "x'; DROP TABLE commands;--", "conv-1", WINDOW)
    assert lx.table_counts(service.directory / "ledger.db") == before


@pytest.mark.parametrize("payload, message", [
    ({"kind": "regenerate"}, "needs an earlier message"),
    ({"kind": "message", "message_id": "m-1"}, "needs 'text'"),
    ({"kind": "message", "message_id": "m-1", "text": 42}, "got int"),
    ({"kind": "message", "message_id": "m-1", "text": "  "}, "non-empty"),
    ({"kind": "message", "message_id": "m 1", "text": "hi"}, "message_id"),
    ({"kind": "message", "message_id": "m-1", "text": "hi", "extra": 1}, "unexpected key"),
    ({"kind": "delete everything"}, "'message' or 'regenerate'"),
    (["message"], "must be a dict"),
])
def test_f3_malformed_commands_are_refused_before_acceptance(service: ChatService, payload: object,
                                                             message: str) -> None:
    before = lx.table_counts(service.directory / "ledger.db")
    with pytest.raises(InvalidPayload, match=message):
        service.handle("acme", new_command_id(), "conv-1", payload)  # type: ignore[arg-type]
    assert lx.table_counts(service.directory / "ledger.db") == before


def test_f3_a_failing_worker_ends_dead_and_the_conversation_moves_on(service: ChatService) -> None:
    service.handle("acme", "first", "conv-1", WINDOW)
    service.dispatch()
    # the thread loses its checkpoints, so a regenerate has nothing to fork from
    service.saver.delete_thread(service.thread_config("acme", "conv-1")["configurable"]["thread_id"])
    service.handle("acme", "regen", "conv-1", {"kind": "regenerate"})
    service.handle("acme", "later", "conv-1", QUESTION)
    for _ in range(3):
        service.dispatch()
    dead = service.status("acme", "regen")
    assert (dead.status, dead.error) == ("dead", "LookupError: nothing to regenerate: the thread has no answer yet")
    assert service.status("acme", "later").status == "done"


def test_threads_racing_one_key_make_one_command_and_one_run(service: ChatService) -> None:
    key = new_command_id()
    results = lx.run_together(12, lambda: service.handle("acme", key, "conv-1", WINDOW))
    assert not [r for r in results if isinstance(r, Exception)]
    assert sum(r.created for r in results) == 1
    service.dispatch()
    assert service.calls["reply"] == 1
    assert lx.status_counts(service.directory / "ledger.db") == {"commands": {"done": 1}, "pending": 0}


def test_fifo_second_command_waits_for_the_first(service: ChatService) -> None:
    a, b = new_command_id(), new_command_id()
    service.handle("acme", a, "conv-1", WINDOW)
    service.handle("acme", b, "conv-1", QUESTION)
    first = service.ledger.claim()
    assert first.command_id == a and service.ledger.claim() is None
    service.ledger.record_result(first, service.work(first).result)
    second = service.ledger.claim()
    assert second.command_id == b
    assert service.work(second).result["answer"] == "You asked for a window seat. (reply #2)"


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_every_crash_point_ends_with_one_run(point: str, tmp_path: Path) -> None:
    row = lx.crash_then_restart(point, directory=tmp_path)
    assert row["crashed"] and row["model_calls"] == 1 and row["status"] == "done" and row["client_got_answer"]
    redelivered = point in ("after_deliver", "before_mark_done")
    assert row["deliveries"] == (2 if redelivered else 1)
    assert row["deduplicated"] == (1 if redelivered else 0)
    assert row["answer_is_head"]


def test_naive_receiver_runs_twice_after_redelivery() -> None:
    assert lx.crash_then_restart("before_mark_done", dedupe=False)["model_calls"] == 2


def test_redelivery_of_an_unfinished_run_resumes_it(service: ChatService) -> None:
    """A run whose checkpoints stop half-way is resumed, not started again."""
    service.handle("acme", new_command_id(), "conv-1", WINDOW)
    delivery = service.ledger.claim()
    config = service.thread_config("acme", "conv-1")
    tagged = {"configurable": {**config["configurable"], "ledger_run_id": delivery.run_id}}
    service.graph.invoke({"messages": [HumanMessage("I prefer a window seat", id="m-1")]}, tagged,
                         interrupt_before=["reply"])  # stands in for a crash before reply
    assert service.calls["reply"] == 0
    service.work(delivery)
    assert service.calls["reply"] == 1
    assert len(service.graph.get_state(config).values["messages"]) == 2


def test_crash_table_runs_every_point_in_one_directory() -> None:
    rows = lx.crash_table(CRASH_POINTS)
    assert [r["case"] for r in rows] == list(CRASH_POINTS)
    assert all(r["model_calls"] == 1 and r["client_got_answer"] for r in rows)
    assert sum(r["deliveries"] for r in rows) == len(CRASH_POINTS) + 2


# --------------------------------------------------------------------------- F2 renewal in ChatService
@pytest.mark.parametrize("renew", [False, True])
def test_f2_a_slow_run_with_and_without_renewal(tmp_path: Path, renew: bool) -> None:
    row = lx.slow_run(tmp_path, renew=renew)
    if renew:  # one delivery, one model call, one chain, and the ledger agrees with the thread
        assert (row["deliveries"], row["model_calls"], row["sibling_checkpoints"], row["attempts"]) == (1, 1, 0, [1])
        assert row["ledger_answer"] == row["head_answer"] == "Noted: a window seat. (reply #1)"
    else:  # delivered twice: two sibling checkpoints, and the ledger's answer is not the head
        assert (row["deliveries"], row["model_calls"], row["sibling_checkpoints"], row["attempts"]) == (2, 2, 2, [1, 2])
        assert row["stale_result_refused"] and row["recorded_by"] == "B"
        assert row["ledger_answer"] == "Noted: a window seat. (reply #2)"
        assert row["head_answer"] == "Noted: a window seat. (reply #1)"


def test_f2_chat_service_renews_in_real_time(tmp_path: Path) -> None:
    """0.3 s leases, a 0.9 s model call, a second dispatcher sweeping all along: one call."""
    calls: Counter = Counter()
    entered, done = threading.Event(), threading.Event()

    def slow() -> None:
        entered.set()
        time.sleep(0.9)

    with ChatService(tmp_path, calls=calls, lease_seconds=0.3, renew_every=0.05, model_call=slow) as a, \
            ChatService(tmp_path, calls=calls, lease_seconds=0.3) as b:
        a.open_conversation("acme", "conv-1")
        a.handle("acme", "cmd-1", "conv-1", WINDOW)

        def sweep() -> None:
            entered.wait(10)
            while not done.is_set():
                b.dispatch()
                time.sleep(0.02)

        sweeper = threading.Thread(target=sweep)
        sweeper.start()
        a.dispatch()
        done.set()
        sweeper.join(10)
        assert calls["reply"] == 1 and calls["deliveries"] == 1


# --------------------------------------------------------------------------- F4 dispatcher processes
@pytest.fixture(scope="module")
def process_server() -> Iterator[preloaded_processes.ProcessServer]:
    """Chapter 11's process server, shared: its children run on directories each test owns, and
    the server itself keeps nothing between requests (it forks a fresh child for each)."""
    with preloaded_processes.ProcessServer(lx.CHILD_PRELOAD) as server:
        yield server
    assert server.exit_code == 0  # it ended cleanly after every test that used it


@pytest.mark.parametrize("fork", [True, False], ids=["forked-from-the-process-server", "fresh-interpreters"])
def test_f4_two_dispatcher_processes_survive_a_crash_inside_the_model_call(tmp_path: Path, fork: bool,
                                                                          request: pytest.FixtureRequest) -> None:
    own = nullcontext(request.getfixturevalue("process_server")) if fork else \
        preloaded_processes.ProcessServer(lx.CHILD_PRELOAD, fork=False)
    with ChatService(tmp_path) as api, own as server:
        assert server.forks is fork
        api.open_conversation("acme", "conv-1")
        api.handle("acme", "K1", "conv-1", WINDOW)
        api.handle("acme", "K2", "conv-1", QUESTION)
        token, bill = tmp_path / "crash.token", tmp_path / "bill.txt"
        token.touch()
        codes = lx.run_dispatchers(server, tmp_path, 2, lease=1.0, bill=bill, crash_once=token)
        assert sorted(codes) == [0, 17]  # one was killed inside its first model call
        assert len(bill.read_text().splitlines()) == 3  # K1 was billed twice
        assert [(c.command_id, c.status) for c in api.ledger.list_commands("acme", "conv-1")] == [
            ("K1", "done"), ("K2", "done")]
        runs = [(r.command_id, r.attempt, r.outcome) for r in api.ledger.list_runs("acme", "conv-1")]
        assert runs == [("K1", 1, None), ("K1", 2, "done"), ("K2", 1, "done")]
        assert "recorded" in (tmp_path / "D1.log").read_text() + (tmp_path / "D2.log").read_text()


def test_a_failing_dispatcher_is_reported_with_its_log(tmp_path: Path,
                                                      process_server: preloaded_processes.ProcessServer) -> None:
    with pytest.raises(RuntimeError, match=r"exit codes \[2\][\s\S]*--lease: invalid float value"):
        lx.run_dispatchers(process_server, tmp_path, 1, lease="soon")  # type: ignore[arg-type]
    assert process_server.is_open  # a failing child leaves its server working


def test_the_dispatch_cli_drains_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ChatService(tmp_path) as api:
        api.open_conversation("acme", "conv-1")
        api.handle("acme", "K1", "conv-1", WINDOW)
    assert main(["dispatch", str(tmp_path), "--until-drained", "--max-seconds", "20"]) == 0
    assert "recorded 1 result(s)" in capsys.readouterr().out
    with ChatService(tmp_path) as api:
        assert api.status("acme", "K1").answer == "Noted: a window seat. (reply #1)"


def test_the_dispatch_cli_runs_as_python_m(tmp_path: Path) -> None:
    with ChatService(tmp_path) as api:
        api.open_conversation("acme", "conv-1")
        api.handle("acme", "K1", "conv-1", WINDOW)
    done = subprocess.run([sys.executable, "-m", "helpers.ledger.service", "dispatch", str(tmp_path),
                           "--until-drained", "--max-seconds", "30"], capture_output=True, text=True, timeout=90)
    assert (done.returncode, done.stdout) == (0, "recorded 1 result(s)\n"), done.stderr


# --------------------------------------------------------------------------- experiments
def test_check_then_insert_in_three_transaction_styles(tmp_path: Path) -> None:
    immediate = lx.check_then_insert_race(tmp_path / "a.db", "immediate")
    autocommit = lx.check_then_insert_race(tmp_path / "b.db", "autocommit")
    snapshot = lx.check_then_insert_race(tmp_path / "c.db", "snapshot")
    assert immediate == {"created": 1, "saw_existing": 15, "integrity_errors": 0, "locked_errors": 0, "rows": 1}
    assert autocommit == {"created": 1, "saw_existing": 0, "integrity_errors": 15, "locked_errors": 0, "rows": 1}
    assert snapshot == {"created": 1, "saw_existing": 0, "integrity_errors": 0, "locked_errors": 15, "rows": 1}
    with pytest.raises(ValueError):
        lx.check_then_insert_race(tmp_path / "d.db", "optimistic")




def test_receive_runs_skips_resumes_and_forks(service: ChatService) -> None:
    """The receiver's four moves, each once, and what each costs in reply-node runs."""
    from helpers.ledger.service import receive

    def provider_down() -> None:
        raise RuntimeError("provider down")

    service.handle("acme", "k1", "conv-1", WINDOW)
    first = service.ledger.claim()
    assert receive(service.graph, service.saver, first) == "ran" and service.calls["reply"] == 1
    assert receive(service.graph, service.saver, first) == "deduplicated" and service.calls["reply"] == 1
    assert service.ledger.deliver(first, service.work)
    service.handle("acme", "k2", "conv-1", QUESTION)
    service.model_call = provider_down
    failed = service.ledger.claim()
    with pytest.raises(RuntimeError):
        receive(service.graph, service.saver, failed)
    service.ledger.release(failed, "provider down")
    service.model_call = None
    again = service.ledger.claim()
    assert again.attempt == 2 and receive(service.graph, service.saver, again) == "resumed"
    assert service.calls["reply"] == 3  # the call that failed was made, and made again
    assert service.ledger.deliver(again, service.work)
    service.handle("acme", "k3", "conv-1", {"kind": "regenerate"})
    regenerate = service.ledger.claim()
    assert receive(service.graph, service.saver, regenerate) == "forked" and service.calls["reply"] == 4
    sources = [s.metadata["source"] for s in service.graph.get_state_history(service.thread_config("acme", "conv-1"))]
    assert sources.count("fork") == 1


def test_a_dead_letter_leaves_no_trace_in_later_runs(service: ChatService) -> None:
    """Audit E2: a regenerate after a dead letter answered the dead message, and it stayed in the thread."""
    from helpers import travel_graphs

    def provider_down() -> None:
        raise RuntimeError("provider down")

    service.handle("acme", "k1", "conv-1", WINDOW)
    service.dispatch()
    service.handle("acme", "k2", "conv-1", {"kind": "message", "message_id": "m-2", "text": "Book me a hotel"})
    service.model_call = provider_down
    for _ in range(3):
        service.dispatch()
    service.model_call = None
    assert service.status("acme", "k2").status == "dead"
    service.handle("acme", "k3", "conv-1", {"kind": "regenerate"})
    service.handle("acme", "k4", "conv-1", {"kind": "message", "message_id": "m-4", "text": "Thanks"})
    assert service.dispatch() == 2
    messages = service.graph.get_state(service.thread_config("acme", "conv-1")).values["messages"]
    lines = travel_graphs.transcript(messages)
    assert [line.split(":")[0] for line in lines] == ["human", "ai", "human", "ai"]
    assert lines[0] == "human: " + WINDOW["text"] and lines[2] == "human: Thanks"
    assert "window seat" in lines[1]  # the regenerate answered the window-seat message again
    assert all("hotel" not in line for line in lines)


def test_a_first_command_that_died_is_not_in_the_next_run(service: ChatService) -> None:
    service.model_call = lambda: (_ for _ in ()).throw(RuntimeError("provider down"))
    service.handle("acme", "k1", "conv-1", {"kind": "message", "message_id": "m-1", "text": "Book me a hotel"})
    for _ in range(3):
        service.dispatch()
    service.model_call = None
    service.handle("acme", "k2", "conv-1", WINDOW)
    assert service.dispatch() == 1
    messages = service.graph.get_state(service.thread_config("acme", "conv-1")).values["messages"]
    assert [m.content for m in messages][:1] == [WINDOW["text"]] and len(messages) == 2


def test_both_files_are_opened_with_synchronous_full(service: ChatService) -> None:
    with service.ledger.tx.read() as conn:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert service.saver.conn.execute("PRAGMA synchronous").fetchone()[0] == 2


def test_receive_judges_a_run_by_the_root_graphs_checkpoints_not_a_subgraphs() -> None:
    """A failure after a subgraph's last checkpoint, before the root's next one: the run is resumed, not skipped.

    The subgraph's checkpoints carry the run's tag too, and the newest of them says the
    subgraph finished (``next`` empty); only the root's checkpoints say whether the run did.
    """
    import sqlite3
    from typing import TypedDict

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    from helpers.ledger import Delivery
    from helpers.ledger.service import RUN_TAG, receive

    class State(TypedDict):
        n: int

    runs = Counter()

    def inner(state: State) -> dict[str, int]:
        runs["inner"] += 1
        return {"n": state["n"] + 1}

    class FailsAfterTheSubgraph(SqliteSaver):
        fail = True

        def put(self, config, checkpoint, metadata, new_versions):
            if self.fail and config["configurable"].get("checkpoint_ns", "") == "" and metadata.get("step") == 1:
                raise RuntimeError("the root's checkpoint after the subgraph was never saved")
            return super().put(config, checkpoint, metadata, new_versions)

    sub = StateGraph(State)
    sub.add_node("inner", inner)
    sub.add_edge(START, "inner")
    sub.add_edge("inner", END)
    saver = FailsAfterTheSubgraph(sqlite3.connect(":memory:", check_same_thread=False))
    root = StateGraph(State)
    root.add_node("sub", sub.compile())
    root.add_edge(START, "sub")
    root.add_edge("sub", END)
    graph = root.compile(checkpointer=saver)
    delivery = Delivery(1, 1, "acme", "k1", "conv-1", "t", "run-1", {"kind": "message"})
    with pytest.raises(RuntimeError):
        graph.invoke({"n": 0}, {"configurable": {"thread_id": "t", RUN_TAG: "run-1"}}, durability="sync")
    saver.fail = False
    tagged = list(saver.list({"configurable": {"thread_id": "t"}}, filter={RUN_TAG: "run-1"}, limit=1))
    assert tagged[0].config["configurable"]["checkpoint_ns"] != ""  # the newest tagged checkpoint is the subgraph's
    assert receive(graph, saver, delivery) == "resumed"
    assert graph.get_state({"configurable": {"thread_id": "t"}}).values == {"n": 1} and runs["inner"] == 1
    saver.conn.close()
