"""Chapter 06's graphs and plumbing: ordering, pending writes, bookings, and real crashes in forked children."""

import os
import uuid

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import RetryPolicy

from helpers.booking_crashes import (
    MODES,
    booking_crash_trials,
    crash_table,
    execution_info,
    fork_child,
    lost_write_trials,
    wait_child,
)
from helpers.fare_lookup_graphs import (
    Airline,
    FlakyDesk,
    WriteWatchSaver,
    build_booking_graph,
    build_lookup_graph,
    pending_write_rows,
    resume_counts,
    run_until_failure,
)

CONFIG = {"configurable": {"thread_id": "t"}}
REQUEST = {"command_id": "6f1c8a52-3b7e-4a8e-9d2a-0c6a1f4e2b10", "seat": "12A"}
needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="the crash experiments fork")


def failed_lookup():
    desk = FlakyDesk()
    saver = WriteWatchSaver(InMemorySaver(), desk)
    graph = build_lookup_graph(saver, desk.find_seat, desk.quote_fare)
    with pytest.raises(TimeoutError, match="fare service timed out"):
        graph.invoke({"route": "PEK-SFO"}, CONFIG)
    return desk, saver, graph


def test_seat_write_is_always_saved_before_the_fare_fails():
    for _ in range(25):  # the ordering comes from events, so every repetition agrees
        desk, saver, graph = failed_lookup()
        rows = pending_write_rows(saver, CONFIG, graph.get_state(CONFIG))
        assert [(r["task"], r["channel"]) for r in rows] == [("lookup_fare", "__error__"), ("lookup_seat", "seat")]
        assert rows[0]["value"] == "TimeoutError('fare service timed out')"


def test_resume_reruns_only_the_failed_node_under_the_same_task_id():
    desk, saver, graph = failed_lookup()
    snapshot = graph.get_state(CONFIG)
    assert snapshot.next == ("lookup_fare",)
    assert graph.invoke(None, CONFIG) == {"route": "PEK-SFO", "seat": "12A (window)", "fare": 420}
    assert desk.counts() == {"find_seat": 1, "quote_fare": 2}
    step0 = next(s for s in graph.get_state_history(CONFIG) if s.metadata["step"] == 0)
    task_of = {channel: task_id for task_id, channel, _ in saver.get_tuple(step0.config).pending_writes}
    failed = next(t.id for t in snapshot.tasks if t.name == "lookup_fare")
    assert task_of["__error__"] == task_of["fare"] == failed != task_of["seat"]


@pytest.mark.parametrize("mode", MODES)
def test_resume_counts_are_the_same_in_every_durability_mode(mode):
    assert resume_counts(mode) == {"error": "TimeoutError", "pending": ["__error__", "seat"],
                                   "calls": {"find_seat": 1, "quote_fare": 2}}


def test_flaky_desk_rejects_unknown_services_and_two_failing_services():
    with pytest.raises(ValueError, match="unknown service"):
        FlakyDesk({"find_hotel": 1})
    with pytest.raises(ValueError, match="only one service may fail"):
        FlakyDesk({"quote_fare": 1, "find_bags": 1}, ["quote_fare", "find_bags"])


def test_run_until_failure_orders_the_failure_after_the_sibling_in_exit_mode():
    desk = FlakyDesk({"find_seat": 1})
    graph = build_lookup_graph(InMemorySaver(), desk.find_seat, desk.quote_fare)
    error = run_until_failure(graph, {"route": "PEK-SFO"}, CONFIG, desk, durability="exit")
    assert isinstance(error, TimeoutError)
    assert sorted(w[1] for w in graph.checkpointer.get_tuple(CONFIG).pending_writes) == ["__error__", "fare"]


def test_airline_books_once_per_key_in_memory_and_in_a_file(tmp_path):
    for airline in (Airline(), Airline(tmp_path / "airline.jsonl")):
        assert airline.book("1A", key="k") == airline.book("1A", key="k") == "BK001"
        assert airline.book("1A", key="other") == "BK002"
        assert airline.book("1A") == "BK003"
        assert airline.bookings == ["BK001", "BK002", "BK003"] and airline.requests == 4
    assert Airline(tmp_path / "airline.jsonl").bookings == ["BK001", "BK002", "BK003"]  # the file outlives the object


def test_booking_repeats_without_a_key_and_not_with_a_business_key():
    airline = Airline(fail_after_booking=1)
    graph = build_booking_graph(InMemorySaver(), airline.book)
    with pytest.raises(ConnectionError):
        graph.invoke(REQUEST, CONFIG)
    assert graph.invoke(None, CONFIG)["confirmation"] == "BK002"
    assert airline.bookings == ["BK001", "BK002"]

    airline = Airline(fail_after_booking=1)
    key = lambda state, info: f"{state['command_id']}/book_seat"  # noqa: E731
    graph = build_booking_graph(InMemorySaver(), airline.book, key,
                                retry_policy=RetryPolicy(initial_interval=0.001, jitter=False))
    assert graph.invoke(REQUEST, CONFIG)["confirmation"] == "BK001"
    assert airline.bookings == ["BK001"] and airline.requests == 2


@needs_fork
def test_fork_child_reports_its_exit_code_and_its_errors(tmp_path):
    assert wait_child(fork_child(os._exit, 17, log_path=tmp_path / "a.log"), tmp_path / "a.log") == 17
    with pytest.raises(RuntimeError, match="(?s)exited with 1.*ZeroDivisionError"):
        wait_child(fork_child(divmod, 1, 0, log_path=tmp_path / "b.log"), tmp_path / "b.log")


@needs_fork
def test_a_crash_loses_the_finished_siblings_write_in_every_mode(tmp_path):
    rows = lost_write_trials(tmp_path, trials=2)
    assert rows == [{"mode": mode, "trials": 2, "seat write on disk": 0, "seat re-ran": 2, "fare re-ran": 2}
                    for mode in MODES]


@needs_fork
def test_a_task_id_key_survives_a_crash_only_under_sync_and_a_business_key_always(tmp_path):
    (tmp_path / "task").mkdir()
    task_key = lambda state, info: f"{info.thread_id}/{info.task_id}"  # noqa: E731
    rows = crash_table(booking_crash_trials(tmp_path / "task", task_key, REQUEST, trials=1))
    assert [(r["mode"], r["step saved"], r["same task_id"], r["bookings"]) for r in rows] == [
        ("sync", 1, 1, "1 (1 of 1)"), ("async", 0, 0, "2 (1 of 1)"), ("exit", 0, 0, "2 (1 of 1)")]

    (tmp_path / "business").mkdir()
    business_key = lambda state, info: str(uuid.uuid5(uuid.UUID(state["command_id"]), "book_seat"))  # noqa: E731
    trials = booking_crash_trials(tmp_path / "business", business_key, REQUEST, modes=[*MODES, None], trials=1)
    assert [t["bookings"] for t in trials] == [1, 1, 1, 1]
    crashed, resumed = (execution_info(a["info"]) for a in trials[-1]["attempts"])
    assert crashed.run_id != resumed.run_id and crashed.task_id != resumed.task_id
