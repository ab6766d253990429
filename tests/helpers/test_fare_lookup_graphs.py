"""The parallel lookup graphs of chapter 06: ordering, counts, pending writes, bookings."""

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from helpers.fare_lookup_graphs import (BookingService, LookupProbe, WriteWatchSaver, book_with_retry,
                                        build_booking_graph, build_lookup_graph, pending_write_rows,
                                        resume_counts, run_until_failure)

CONFIG = {"configurable": {"thread_id": "t"}}


def failed_lookup():
    probe = LookupProbe()
    saver = WriteWatchSaver(InMemorySaver(), probe)
    graph = build_lookup_graph(saver, probe)
    with pytest.raises(TimeoutError, match="fare service timed out"):
        graph.invoke({"route": "PEK-SFO"}, CONFIG)
    return probe, saver, graph


def test_seat_write_is_always_saved_before_the_fare_fails():
    for _ in range(25):  # the ordering comes from events, so every repetition agrees
        probe, saver, graph = failed_lookup()
        rows = pending_write_rows(saver, CONFIG, graph.get_state(CONFIG))
        assert [(r["task"], r["channel"]) for r in rows] == [("lookup_fare", "__error__"), ("lookup_seat", "seat")]
        assert rows[0]["value"] == "TimeoutError('fare service timed out')"


def test_resume_reruns_only_the_failed_node_with_the_same_task_id():
    probe, saver, graph = failed_lookup()
    snapshot = graph.get_state(CONFIG)
    assert snapshot.next == ("lookup_fare",)
    assert graph.invoke(None, CONFIG) == {"route": "PEK-SFO", "seat": "12A (window)", "fare": 420}
    assert probe.counts(["lookup_seat", "lookup_fare"]) == {"lookup_seat": 1, "lookup_fare": 2}
    failed = next(t.id for t in snapshot.tasks if t.name == "lookup_fare")
    assert probe.task_ids["lookup_fare"] == [failed, failed]


@pytest.mark.parametrize("mode", ["sync", "async", "exit"])
def test_resume_counts_are_the_same_in_every_durability_mode(mode):
    assert resume_counts(mode) == {"error": "TimeoutError", "pending": ["__error__", "seat"],
                                   "calls": {"lookup_seat": 1, "lookup_fare": 2}}


def test_three_lookups_with_a_twice_failing_fare_and_a_price_step():
    probe = LookupProbe({"lookup_fare": 2})
    graph = build_lookup_graph(WriteWatchSaver(InMemorySaver(), probe), probe,
                               ["lookup_seat", "lookup_fare", "lookup_bags"], then_price=True)
    errors = [run_until_failure(graph, inputs, CONFIG, probe) for inputs in ({"route": "PEK-SFO"}, None, None)]
    assert [type(e).__name__ for e in errors] == ["TimeoutError", "TimeoutError", "NoneType"]
    assert probe.counts() == {"lookup_bags": 1, "lookup_fare": 3, "lookup_seat": 1, "price_trip": 1}
    assert graph.get_state(CONFIG).values["price"] == "420 EUR, seat 12A (window)"


def test_build_lookup_graph_rejects_unknown_nodes_and_two_failing_nodes():
    with pytest.raises(ValueError, match="unknown lookup node"):
        build_lookup_graph(InMemorySaver(), LookupProbe(), ["lookup_hotel"])
    with pytest.raises(ValueError, match="only one lookup may fail"):
        build_lookup_graph(InMemorySaver(), LookupProbe({"lookup_fare": 1, "lookup_bags": 1}),
                           ["lookup_fare", "lookup_bags"])


def test_booking_repeats_without_a_key_and_not_with_one():
    airline = BookingService()
    graph = build_booking_graph(InMemorySaver(), airline)
    assert book_with_retry(graph, "b1") == {"first_run": "ConnectionError", "final": "BK002"}
    assert airline.bookings == ["12A", "12A"] and graph.calls["book_seat"] == 2

    airline = BookingService()
    graph = build_booking_graph(InMemorySaver(), airline, key=lambda info: f"{info.thread_id}/{info.task_id}")
    assert book_with_retry(graph, "b1") == {"first_run": "ConnectionError", "final": "BK001"}
    assert airline.bookings == ["12A"] and airline.requests == 2


def test_booking_service_keys():
    airline = BookingService()
    assert airline.book("1A", key="k") == airline.book("1A", key="k") == "BK001"
    assert airline.book("1A", key="other") == "BK002"
    assert airline.book("1A") == "BK003"
    assert book_with_retry(build_booking_graph(InMemorySaver(), BookingService(), fail_after_booking=0), "ok") == {
        "first_run": "ok", "final": "BK001"}
