"""helpers.delta_graphs: chapter 15's DeltaChannel assistant and its batching-invariant reducer."""

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from helpers import delta_graphs, travel_graphs


def test_add_message_batch_is_batching_invariant_and_replaces_by_id():
    first = [HumanMessage("Window seat, please.", id="m1")]
    second = [HumanMessage("Any meals?", id="m2"), HumanMessage("Aisle seat, please.", id="m1")]
    one_by_one = delta_graphs.add_message_batch(delta_graphs.add_message_batch([], [first]), [second])
    assert one_by_one == delta_graphs.add_message_batch([], [first, second])
    assert [m.content for m in one_by_one] == ["Aisle seat, please.", "Any meals?"]


def test_delta_chat_graph_remembers_and_stores_no_message_list():
    saver = InMemorySaver()
    chat = delta_graphs.build_delta_chat_graph(saver, snapshot_frequency=100)
    travel_graphs.say(chat, "t", "I'd like a window seat, please.")
    assert travel_graphs.say(chat, "t", "Which seat did I ask for?") == "You asked for a window seat."
    thread = {"configurable": {"thread_id": "t"}}
    assert len(chat.get_state(thread).values["messages"]) == 4
    stored = [c.checkpoint["channel_values"].get("messages") for c in saver.list(thread)]
    assert len(stored) == 6 and not any(isinstance(value, list) for value in stored)
    assert all("counters_since_delta_snapshot" in c.metadata for c in saver.list(thread))
