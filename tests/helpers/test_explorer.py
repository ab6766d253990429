"""helpers.explorer: plain view functions, and the thin widget shell around them."""

import tempfile
from pathlib import Path
from typing import TypedDict

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Interrupt, interrupt

from helpers.explorer import (
    CheckpointExplorer,
    CheckpointView,
    checkpoint_views,
    describe_views,
    explore,
    pending_from_channels,
    render_html,
    render_listing,
    render_text,
    saver_of,
    short,
    threads_in,
)
from helpers.history_tree import history_tree
from helpers.travel_graphs import build_chat_graph, say


class Trip(TypedDict, total=False):
    seat: str
    fare: int


def two_node_graph(saver):
    builder = StateGraph(Trip)
    builder.add_node("quote", lambda s: {"fare": 120})
    builder.add_node("discount", lambda s: {"fare": s["fare"] - 50})
    builder.add_edge(START, "quote")
    builder.add_edge("quote", "discount")
    builder.add_edge("discount", END)
    return builder.compile(checkpointer=saver)


@pytest.fixture
def saver():
    """One saver, two graphs: chat thread 'trip-1' (two turns + a replay), booking thread 'booking-1'."""
    saver = InMemorySaver()
    chat = build_chat_graph(saver)
    say(chat, "trip-1", "I'd like a window seat")
    say(chat, "trip-1", "Which seat did I ask for?")
    chat.invoke(None, history_tree(chat, {"configurable": {"thread_id": "trip-1"}}).config("C4"))
    two_node_graph(saver).invoke({"seat": "aisle"}, {"configurable": {"thread_id": "booking-1"}})
    return saver


def test_threads_in_lists_sorted_thread_ids(saver):
    assert threads_in(saver) == ["booking-1", "trip-1"]
    assert threads_in(InMemorySaver()) == []
    assert threads_in(build_chat_graph(saver)) == ["booking-1", "trip-1"]


def test_views_carry_labels_links_and_metadata(saver):
    views = checkpoint_views(saver, "trip-1")
    assert [v.label for v in views] == [f"C{i}" for i in range(8)]
    assert [v.index for v in views] == list(range(8)) and {v.total for v in views} == {8}
    c4, c6 = views[4], views[6]
    assert (c4.step, c4.source, c4.next, c4.parent, c4.children) == (3, "loop", ("reply",), "C3", ("C5", "C6"))
    assert (c6.step, c6.source, c6.parent) == (4, "fork", "C4")
    assert [v.is_head for v in views] == [False] * 7 + [True]
    assert views[0].values == () and views[0].internal == ("__start__",)
    assert c4.internal == ("branch:to:reply",)
    assert c4.values[0][0] == "messages" and c4.values[0][1].startswith("3 messages\n  human: I'd like")
    assert c4.metadata == ()


def test_next_from_channels_matches_the_graph(saver):
    chat, booking = build_chat_graph(saver), two_node_graph(saver)
    for graph, thread in ((chat, "trip-1"), (booking, "booking-1")):
        from_saver = checkpoint_views(saver, thread)
        from_graph = checkpoint_views(graph, thread)
        assert [v.next for v in from_saver] == [v.next for v in from_graph]
        # the graph shows an empty message list at C0 where the saver has no channel yet
        assert [v.values for v in from_saver][1:] == [v.values for v in from_graph][1:]
        assert [v.pending_writes for v in from_saver] == [v.pending_writes for v in from_graph]


def test_pending_writes_are_named_and_sorted(saver):
    views = checkpoint_views(saver, "trip-1")
    assert views[0].pending_writes == (("__start__", "branch:to:reply", "None"),
                                       ("__start__", "messages", "human: I'd like a window seat"))
    assert views[4].pending_writes == (("reply", "messages", "ai: You asked for a window seat."),)
    assert views[5].pending_writes == ()


def test_render_text_shows_everything_without_volatile_ids(saver):
    text = render_text(checkpoint_views(saver, "trip-1")[4])
    assert text.splitlines()[0] == "thread 'trip-1' · C4 · checkpoint 5 of 8 · step 3 · source loop"
    assert "parent: C3   children: C5, C6" in text and "next: ('reply',)" in text
    assert "reply -> messages: ai: You asked for a window seat." in text
    assert "internal channels: branch:to:reply" in text
    assert "checkpoint_id" not in text and "-" * 4 not in text.replace("----", "")
    head = render_text(checkpoint_views(saver, "trip-1")[-1])
    assert "C7 (head)" in head and "pending writes: none" in head
    empty = render_text(checkpoint_views(saver, "trip-1")[0])
    assert "values: {} (empty)" in empty


def test_render_html_escapes_and_lists_fields(saver):
    view = checkpoint_views(saver, "booking-1")[0]
    page = render_html(view)
    assert "<table>" in page and "source / step" in page and "pending writes" in page
    tricky = CheckpointView("<t>", "C0", 0, 1, -1, "input", (), None, (), (("k", "<b>x</b>"),), (), (),
                            (("user", "<a>"),), True)
    page = render_html(tricky)
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page and "&lt;a&gt;" in page


def test_render_listing_brackets_the_selection(saver):
    views = checkpoint_views(saver, "booking-1")
    assert render_listing(views, "C2") == "booking-1: C0 C1 [C2] C3"
    assert render_listing([], None) == "(no checkpoints)"
    assert describe_views(views).splitlines()[0].split() == ["label", "step", "source", "next", "parent", "writes"]


def test_short_is_stable_for_messages_interrupts_dicts_and_long_text():
    assert short([HumanMessage("hi", id="x"), AIMessage("hello", id="y")]) == "human: hi | ai: hello"
    assert short(Interrupt(value="approve?", id="abc123")) == "Interrupt(value='approve?')"
    assert short({"b": 1, "a": "x"}) == "{'a': 'x', 'b': 1}"
    assert short([1, (2,), [Interrupt(value=3, id="z")]]) == "[1, (2,), [Interrupt(value=3)]]"
    assert short([]) == "[]"
    long = short("x" * 200)
    assert len(long) == 72 and long.endswith("…")
    assert short("a  b\nc") == "'a b\\nc'"  # runs of spaces collapse: one line, always


def test_pending_from_channels():
    assert pending_from_channels({"__start__": {}, "messages": []}) == ("__start__",)
    assert pending_from_channels({"branch:to:b": None, "branch:to:a": None}) == ("a", "b")
    assert pending_from_channels({}) == ()


def test_saver_of_accepts_savers_and_graphs_and_explains_the_rest(saver):
    assert saver_of(saver) is saver
    assert saver_of(build_chat_graph(saver)) is saver
    with pytest.raises(TypeError, match="expected a checkpointer"):
        saver_of("not a saver")
    with pytest.raises(ValueError, match="no checkpointer"):
        saver_of(build_chat_graph(None))


def test_interrupted_thread_shows_the_interrupt_write():
    def ask(state):
        return {"seat": interrupt("which seat?")}

    builder = StateGraph(Trip)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    graph = builder.compile(checkpointer=InMemorySaver())
    graph.invoke({"fare": 1}, {"configurable": {"thread_id": "i"}})
    view = checkpoint_views(graph, "i")[-1]
    assert view.next == ("ask",)
    assert ("ask", "__interrupt__", "[Interrupt(value='which seat?')]") in view.pending_writes
    assert "id=" not in render_text(view)


def test_sqlite_saver_works_the_same():
    with tempfile.TemporaryDirectory() as folder:
        with SqliteSaver.from_conn_string(str(Path(folder) / "c.db")) as sqlite:
            chat = build_chat_graph(sqlite)
            say(chat, "s-1", "I'd like a window seat")
            say(chat, "s-2", "Which seat did I ask for?")
            assert threads_in(sqlite) == ["s-1", "s-2"]
            views = checkpoint_views(sqlite, "s-1")
            assert [(v.label, v.source, v.next) for v in views] == [
                ("C0", "input", ("__start__",)), ("C1", "loop", ("reply",)), ("C2", "loop", ())]
            assert views[1].pending_writes == (("reply", "messages", "ai: Noted: a window seat."),)


def test_widget_repr_is_stable_and_short(saver):
    explorer = explore(saver, "trip-1")
    assert isinstance(explorer, CheckpointExplorer)
    assert repr(explorer) == "CheckpointExplorer(threads=2, thread='trip-1', checkpoint='C7', of=8)"
    bundle = explorer._repr_mimebundle_()
    assert bundle["text/plain"] == repr(explorer) and len(repr(explorer)) < 110


def test_widget_follows_selection_parent_and_thread(saver):
    explorer = explore(saver)
    assert explorer.thread_id == "booking-1" and explorer.selected == "C3"
    explorer.select_thread("trip-1")
    assert explorer._slider.options == tuple(f"C{i}" for i in range(8)) and explorer._slider.value == "C7"
    explorer._slider.value = "C6"  # what dragging the slider does
    assert explorer.selected == "C6" and "fork" in explorer._pane.value
    explorer.go_parent()
    assert explorer.selected == "C4" and explorer._slider.value == "C4"
    assert explorer.text().splitlines()[0] == "trip-1: C0 C1 C2 C3 [C4] C5 C6 C7"
    explorer._thread_box.value = "booking-1"  # what the dropdown does
    assert explorer.thread_id == "booking-1" and explorer.selected == "C3"
    explorer.select("C0")
    explorer.go_parent()  # the root has no parent: stays
    assert explorer.selected == "C0" and explorer._parent_button.disabled
    with pytest.raises(ValueError, match="no checkpoint"):
        explorer.select("C42")
    with pytest.raises(ValueError, match="unknown thread"):
        explorer.select_thread("nope")


def test_an_explorer_is_a_snapshot_until_refreshed(saver):
    explorer = explore(saver, "trip-1")
    explorer.select("C3")
    say(build_chat_graph(saver), "trip-1", "Thanks!")
    say(build_chat_graph(saver), "trip-2", "Hello")
    explorer.select_thread("booking-1")
    explorer.select_thread("trip-1")  # back again: still the snapshot, at its head
    assert (explorer.selected, len(explorer.views), explorer.threads) == ("C7", 8, ["booking-1", "trip-1"])
    explorer.select("C3")
    explorer._reread_button.click()  # what the "re-read saver" button does
    assert explorer.selected == "C3" and len(explorer.views) == 11
    assert explorer.threads == ["booking-1", "trip-1", "trip-2"]
    assert list(explorer._thread_box.options) == explorer.threads


def test_each_explorer_keeps_showing_what_its_cell_asked_for(saver):
    """Issue 14 item 8: a later cell's explorer never moves an earlier cell's widget."""
    first = explore(saver, "trip-1")
    second = explore(saver, "trip-1", "C4")
    third = explore(saver, "booking-1", "C2")
    third.select("C1")
    say(build_chat_graph(saver), "trip-1", "Thanks!")  # the saver moves on, as later cells do
    assert (first.thread_id, first.selected, first._slider.value, len(first.views)) == ("trip-1", "C7", "C7", 8)
    assert first.fallback_note().splitlines()[0] == "Checkpoint explorer: thread 'trip-1' at C7 (8 checkpoints)."
    assert (second.selected, second._slider.value) == ("C4", "C4")
    assert second.text().splitlines()[1].startswith("thread 'trip-1' · C4 · checkpoint 5 of 8")
    with pytest.raises(ValueError, match="no checkpoint 'C42'"):
        explore(saver, "trip-1", "C42")


def test_displaying_an_explorer_shows_a_plain_text_fallback_first(saver, monkeypatch):
    """Issue 14 item 7: a saved and reopened notebook has no live widget; the text says what to do."""
    explorer = explore(saver, "trip-1", "C4")
    note, widget = explorer.display_bundles()
    assert note == {"text/plain": explorer.fallback_note()}
    assert "Re-run this cell to get the interactive explorer" in note["text/plain"]
    assert "model not found" in note["text/plain"] and "thread 'trip-1' at C4 (8 checkpoints)" in note["text/plain"]
    assert widget["text/plain"] == repr(explorer)
    assert widget["application/vnd.jupyter.widget-view+json"]["model_id"] == explorer.model_id
    shown = []
    monkeypatch.setattr("helpers.explorer.display", lambda bundle, raw: shown.append((bundle, raw)))
    explorer._ipython_display_()
    assert shown == [(note, True), (widget, True)]
    assert explore(InMemorySaver()).fallback_note().startswith("Checkpoint explorer: no checkpoints.\n")


def test_widget_on_an_empty_saver_and_unknown_thread():
    explorer = explore(InMemorySaver())
    assert explorer.view is None and explorer.text() == "(no checkpoints)"
    assert repr(explorer) == "CheckpointExplorer(threads=0, thread=None, checkpoint=None, of=0)"
    with pytest.raises(ValueError, match="has no checkpoints here"):
        explore(InMemorySaver(), "ghost")
