"""helpers.tenancy: owned conversation -> opaque thread, refusals, one thread per graph."""

import itertools
import threading

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from helpers.tenancy import AccessDenied, ThreadDirectory, build_fare_desk_graph, new_opaque_id
from helpers.travel_graphs import build_chat_graph


def test_opaque_ids_are_random_hex():
    ids = {new_opaque_id() for _ in range(100)}
    assert len(ids) == 100 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)


def test_owner_gets_a_stable_thread_per_graph():
    counter = itertools.count()
    directory = ThreadDirectory(new_id=lambda: f"id{next(counter)}")
    conv = directory.open_conversation("acme", "ana")
    chat = directory.config_for("acme", "ana", conv)
    assert chat == directory.config_for("acme", "ana", conv, graph="chat")
    fares = directory.config_for("acme", "ana", conv, graph="fare_desk")
    assert chat["configurable"]["thread_id"] != fares["configurable"]["thread_id"]
    both = [chat["configurable"]["thread_id"], fares["configurable"]["thread_id"]]
    assert directory.threads_of_tenant("acme") == sorted(both)
    assert directory.threads_of_tenant("globex") == []


@pytest.mark.parametrize("tenant,user,conversation", [("globex", "ana", None), ("acme", "bo", None),
                                                       ("acme", "ana", "nope"), ("acme", "ana", "")])
def test_foreign_and_unknown_conversations_get_the_same_refusal(tenant, user, conversation):
    directory = ThreadDirectory()
    conv = directory.open_conversation("acme", "ana")
    with pytest.raises(AccessDenied, match="conversation not found for this caller"):
        directory.config_for(tenant, user, conversation if conversation is not None else conv)
    assert issubclass(AccessDenied, PermissionError)


def test_refused_caller_creates_no_thread():
    directory = ThreadDirectory()
    conv = directory.open_conversation("acme", "ana")
    with pytest.raises(AccessDenied):
        directory.config_for("globex", "bo", conv, graph="fare_desk")
    assert directory.threads_of_tenant("acme") == []


def test_concurrent_first_use_yields_one_thread():
    directory = ThreadDirectory()
    conv = directory.open_conversation("acme", "ana")
    barrier, results = threading.Barrier(8), []

    def worker():
        barrier.wait()
        results.append(directory.thread_id("acme", "ana", conv))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 1


def test_graphs_sharing_a_saver_are_isolated_by_the_directory():
    saver, directory = InMemorySaver(), ThreadDirectory()
    chat, fare_desk = build_chat_graph(saver), build_fare_desk_graph(saver)
    conv = directory.open_conversation("acme", "ana")
    chat.invoke({"messages": [HumanMessage("I prefer a window seat")]}, directory.config_for("acme", "ana", conv))
    reply = fare_desk.invoke({"messages": [HumanMessage("Fares?")]},
                             directory.config_for("acme", "ana", conv, "fare_desk"))
    assert "I see 1 message(s)" in reply["messages"][-1].content


def test_shared_thread_leaks_between_graphs():
    saver = InMemorySaver()
    chat, fare_desk = build_chat_graph(saver), build_fare_desk_graph(saver)
    config = {"configurable": {"thread_id": "7"}}
    chat.invoke({"messages": [HumanMessage("I prefer a window seat")]}, config)
    reply = fare_desk.invoke({"messages": [HumanMessage("Fares?")]}, config)
    assert "I see 3 message(s)" in reply["messages"][-1].content
