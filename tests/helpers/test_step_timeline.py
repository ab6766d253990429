"""helpers.step_timeline: the booking flow, timeline rows, the plot's data, step-ordered stream views, the trace."""

import operator
import sys
import threading
from typing import Annotated, TypedDict

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402

from helpers.step_timeline import (  # noqa: E402
    book,
    build_booking_flow,
    debug_events,
    draw_timeline,
    lookup_fare,
    lookup_seat,
    quote,
    request_approval,
    timeline_points,
    timeline_rows,
    trace_runtime,
    updates_by_step,
)
from helpers.travel_graphs import build_chat_graph, say  # noqa: E402


class State(TypedDict, total=False):
    seen: Annotated[list, operator.add]


def fan_out(first_to_finish=None):
    """a and b in parallel, then c. ``first_to_finish`` forces which parallel node ends first."""
    done = threading.Event()

    def node(name):
        def run(state):
            if first_to_finish and name in ("a", "b") and name != first_to_finish:
                assert done.wait(5)
            if name == first_to_finish:
                done.set()
            return {"seen": [name]}
        return run

    builder = StateGraph(State)
    for name in "abc":
        builder.add_node(name, node(name))
    builder.add_edge(START, "a")
    builder.add_edge(START, "b")
    builder.add_edge(["a", "b"], "c")
    builder.add_edge("c", END)
    return builder.compile(checkpointer=InMemorySaver())


def test_timeline_rows_of_a_fan_out():
    graph = fan_out()
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({}, config)
    rows = timeline_rows(graph, config)
    assert [(r["step"], r["checkpoint"], r["source"], r["nodes run"]) for r in rows] == [
        (-1, "C0", "input", ()), (0, "C1", "loop", ("__start__",)), (1, "C2", "loop", ("a", "b")),
        (2, "C3", "loop", ("c",))]
    assert rows[-1]["next"] == ()


def test_timeline_rows_span_invokes():
    graph = build_chat_graph(InMemorySaver())
    for text in ("window seat", "Which seat?"):
        say(graph, "t", text)
    rows = timeline_rows(graph, {"configurable": {"thread_id": "t", "checkpoint_id": "ignored"}})
    assert [r["step"] for r in rows] == [-1, 0, 1, 2, 3, 4]
    assert [r["nodes run"] for r in rows] == [(), ("__start__",), ("reply",), (), ("__start__",), ("reply",)]


def test_draw_timeline_returns_and_prints_what_it_plots(capsys):
    graph = fan_out()
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({}, config)
    rows = timeline_rows(graph, config)
    points = draw_timeline(rows, title="test")
    out = capsys.readouterr().out
    assert "nodes run" in out and "C3" in out
    assert points == timeline_points(rows)
    assert points["nodes"] == ["__start__", "a", "b", "c"]
    assert points["tasks"] == [(0, "__start__"), (1, "a"), (1, "b"), (2, "c")]
    assert points["checkpoints"] == [(-1, "C0", "input"), (0, "C1", "loop"), (1, "C2", "loop"), (2, "C3", "loop")]
    ax = plt.gca()
    assert len(ax.collections) == len(points["tasks"]) + len(points["checkpoints"])
    plt.close("all")


def test_stream_views_do_not_depend_on_which_parallel_node_finishes_first():
    outputs = []
    for first in ("a", "b"):
        graph = fan_out(first_to_finish=first)
        outputs.append((updates_by_step(graph, {}, {"configurable": {"thread_id": "u"}}),
                        debug_events(graph, {}, {"configurable": {"thread_id": "d"}})))
    assert outputs[0] == outputs[1]
    updates, events = outputs[0]
    assert [(u["step"], u["node"]) for u in updates] == [(1, "a"), (1, "b"), (2, "c")]
    assert [(e["step"], e["phase"], e["node"]) for e in events if e["step"] == 1] == [
        (1, "plan", "a"), (1, "plan", "b"), (1, "execute", "a"), (1, "execute", "b"), (1, "update+save", "-")]
    assert [e["detail"] for e in events if e["phase"] == "update+save"] == [
        "source=input next=__start__", "source=loop next=a,b", "source=loop next=c", "source=loop next=()"]


def test_booking_flow_routes_by_fare_and_takes_a_router():
    graph = build_booking_flow(InMemorySaver())
    assert graph.invoke({"route": "BER-LIS"}, {"configurable": {"thread_id": "lis"}})["status"] == "booked"
    syd = graph.invoke({"route": "BER-SYD"}, {"configurable": {"thread_id": "syd"}})
    assert syd["status"] == "waiting for approval"
    assert sorted(syd["seen"]) == ["lookup_fare saw seat=None", "lookup_seat saw fare=None",
                                   "quote saw seat=12A fare=1450"]
    always_book = build_booking_flow(router=lambda state: "book")
    assert always_book.invoke({"route": "BER-SYD"})["status"] == "booked"


def test_trace_runtime_lists_a_resume_in_order_without_changing_it():
    class Stop(Exception):
        pass

    def quote_that_fails(state):
        raise Stop

    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "t"}}
    try:
        build_booking_flow(saver, quote_node=quote_that_fails).invoke({"route": "BER-SYD"}, config,
                                                                       durability="sync")
    except Stop:
        pass
    graph = build_booking_flow(saver)
    nodes = [lookup_seat, lookup_fare, quote, book, request_approval]
    trace = trace_runtime(lambda: graph.invoke(None, config, durability="sync"), nodes)
    ordered = [(row["call"], row["thread"], row["detail"]) for row in trace if row["call"] != "saver.put_writes"]
    assert ordered == [
        ("saver.get_tuple", "main", "checkpoint of step 1"),
        ("prepare_next_tasks", "main", "tasks: quote"),
        ("quote", "main", ""),
        ("apply_writes", "main", "updated: branch:to:request_approval, seen"),
        ("create_checkpoint", "main", "checkpoint of step 2"),
        ("saver.put", "background", "checkpoint of step 2"),
        ("prepare_next_tasks", "main", "tasks: request_approval"),
        ("request_approval", "main", ""),
        ("apply_writes", "main", "updated: status"),
        ("create_checkpoint", "main", "checkpoint of step 3"),
        ("saver.put", "background", "checkpoint of step 3"),
        ("prepare_next_tasks", "main", "no tasks: the run ends"),
    ]
    assert sum(row["call"] == "saver.put_writes" for row in trace) == 2
    assert graph.get_state(config).values["status"] == "waiting for approval"
    assert sys.getprofile() is None and threading.getprofile() is None
