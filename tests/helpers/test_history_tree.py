"""helpers.history_tree: labels, edges, branches, writers and the plot of a thread's tree."""

from collections import Counter
from typing import TypedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from langchain_core.messages import HumanMessage  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402

from helpers.history_tree import (  # noqa: E402
    HistoryTree,
    assign_lanes,
    config_of,
    format_branches,
    format_edges,
    history_tree,
    labels_of,
    lane_names,
    plot_history_tree,
)
from helpers.travel_graphs import build_chat_graph, say  # noqa: E402

TRIP = {"configurable": {"thread_id": "t"}}


@pytest.fixture
def forked_chat():
    """Two turns (C0..C5), a replay from C4 (C6 fork, C7), an update on C2 (C8), a turn on it (C9..C11)."""
    chat = build_chat_graph(InMemorySaver())
    say(chat, "t", "I'd like a window seat")
    say(chat, "t", "Which seat did I ask for?")
    tree = history_tree(chat, TRIP)
    chat.invoke(None, tree.config("C4"))
    chat.update_state(tree.config("C2"), {"messages": [HumanMessage("Actually, make that a middle seat")]})
    say(chat, "t", "Which seat did I ask for?")
    return chat


class Fare(TypedDict, total=False):
    fare: int


def fare_graph():
    calls = Counter()

    def quote(state):
        calls["quote"] += 1
        return {"fare": 120}

    def discount(state):
        calls["discount"] += 1
        return {"fare": state["fare"] - 150}

    builder = StateGraph(Fare)
    builder.add_node("quote", quote)
    builder.add_node("discount", discount)
    builder.add_edge(START, "quote")
    builder.add_edge("quote", "discount")
    builder.add_edge("discount", END)
    return builder.compile(checkpointer=InMemorySaver()), calls


def test_labels_edges_and_head_of_a_forked_thread(forked_chat):
    tree = history_tree(forked_chat, TRIP)
    assert tree.labels == [f"C{i}" for i in range(12)]
    assert tree.head == "C11" and tree.roots() == ["C0"]
    assert ("C4", "C6") in tree.edges() and ("C2", "C8") in tree.edges()
    assert len(tree.edges()) == 11
    assert tree["C4"].children == ("C5", "C6") and tree["C2"].children == ("C3", "C8")
    assert (tree["C6"].source, tree["C6"].step, tree["C6"].parent) == ("fork", 4, "C4")
    assert (tree["C8"].source, tree["C8"].step, tree["C8"].parent) == ("update", 2, "C2")
    assert sorted(tree.leaves()) == ["C11", "C5", "C7"]
    assert len(tree) == 12 and [n.label for n in tree][:2] == ["C0", "C1"]


def test_steps_grow_by_one_along_every_edge(forked_chat):
    tree = history_tree(forked_chat, TRIP)
    assert all(tree[child].step == tree[parent].step + 1 for parent, child in tree.edges())


def test_branch_follows_parents_to_the_head(forked_chat):
    tree = history_tree(forked_chat, TRIP)
    assert [n.label for n in tree.branch()] == ["C0", "C1", "C2", "C8", "C9", "C10", "C11"]
    assert [n.label for n in tree.branch("C7")] == ["C0", "C1", "C2", "C3", "C4", "C6", "C7"]


def test_labels_do_not_move_when_the_thread_grows(forked_chat):
    before = history_tree(forked_chat, TRIP)
    say(forked_chat, "t", "Thanks!")
    after = history_tree(forked_chat, TRIP)
    assert after.labels[: len(before)] == before.labels
    for label in before.labels:
        assert after.config(label) == before.config(label)
    assert after.head == f"C{len(after) - 1}"


def test_config_round_trips_and_unknown_labels_explain_themselves(forked_chat):
    tree = history_tree(forked_chat, TRIP)
    assert tree.label_of(tree.config("C6")) == "C6"
    assert tree.label_of(TRIP) is None and tree.label_of(None) is None
    assert config_of(forked_chat, TRIP, "C3") == tree.config("C3")
    assert labels_of(forked_chat, TRIP, [tree.config("C1"), None]) == ["C1", None]
    with pytest.raises(KeyError, match="labels are C0"):
        tree["C99"]


def test_lanes_and_branch_names(forked_chat):
    tree = history_tree(forked_chat, TRIP)
    assert tree.lanes == 3
    assert {tree[f"C{i}"].lane for i in range(6)} == {0}
    assert tree["C6"].lane == tree["C7"].lane == 1
    assert {tree[f"C{i}"].lane for i in range(8, 12)} == {2}
    assert lane_names(tree) == ["main", "from C4", "from C2"]
    assert format_branches(tree).splitlines()[1] == "  from C4: C6 fork 4, C7 loop 5"


def test_assign_lanes_on_a_plain_mapping():
    parents = {"C0": None, "C1": "C0", "C2": "C1", "C3": "C0", "C4": "C1", "C5": "C3"}
    assert assign_lanes(parents) == {"C0": 0, "C1": 0, "C2": 0, "C4": 1, "C3": 2, "C5": 2}
    assert assign_lanes({}) == {}


def test_format_edges_marks_the_head_and_can_filter(forked_chat):
    tree = history_tree(forked_chat, TRIP)
    lines = format_edges(tree).splitlines()
    assert lines[0] == "(root) -> C0   input  step -1"
    assert lines[6] == "    C4 -> C6   fork   step 4"
    assert lines[-1].endswith("<- head") and "C11" in lines[-1]
    assert format_edges(tree, only=["C8"]) == "    C2 -> C8   update step 2"


def test_written_by_names_the_node_the_input_and_update_state():
    graph, calls = fare_graph()
    config = {"configurable": {"thread_id": "f"}}
    graph.invoke({"fare": 0}, config)
    tree = history_tree(graph, config)
    fares = {n.label: n.values.get("fare") for n in tree}
    assert fares == {"C0": None, "C1": 0, "C2": 120, "C3": -30}
    assert tree.written_by("C1", "fare") == "__start__"
    assert tree.written_by("C2", "fare") == "quote"
    assert tree.written_by("C3", "fare") == "discount"
    assert tree.written_by("C0", "fare") == "-"
    assert tree.written_by("C3", "seat") == "-"
    graph.update_state(tree.config("C2"), {"fare": 100}, as_node="discount")
    graph.invoke(None, tree.config("C1"))
    tree = history_tree(graph, config)
    assert tree["C4"].source == "update" and tree.written_by("C4", "fare") == "update_state"
    assert tree["C5"].source == "fork" and tree.written_by("C5", "fare") == "fork"
    assert calls == {"quote": 2, "discount": 2}


def test_plot_draws_prints_edges_and_returns_the_tree(forked_chat, capsys):
    fig, ax = plt.subplots()
    tree = plot_history_tree(forked_chat, TRIP, ax=ax)
    assert isinstance(tree, HistoryTree)
    printed = capsys.readouterr().out
    assert printed.strip() == format_edges(tree)
    assert len(ax.collections) >= len(tree)  # one marker per checkpoint (+ legend handles)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["main", "from C4", "from C2"]
    plt.close(fig)
    again = plot_history_tree(tree, show_edges=False)
    assert capsys.readouterr().out == "" and again is tree
    plt.close("all")


def test_an_empty_thread_gives_an_empty_tree():
    chat = build_chat_graph(InMemorySaver())
    tree = history_tree(chat, {"configurable": {"thread_id": "nobody"}})
    assert len(tree) == 0 and tree.head is None and tree.branch() == [] and tree.edges() == []
    assert format_edges(tree) == ""
