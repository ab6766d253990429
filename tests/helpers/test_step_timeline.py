"""helpers.step_timeline: timeline rows, the plot's data, and step-ordered stream views."""

import operator
import threading
from typing import Annotated, TypedDict

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402

from helpers.step_timeline import debug_events, draw_timeline, timeline_points, timeline_rows, updates_by_step  # noqa: E402
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
