"""Wrong answers for chapter 15's exercises must fail with a hint; the nearest visible cells must not pass."""

import functools

from langgraph.graph.message import add_messages

from helpers.checks import PASSED, evaluate

# -- 15.1: copies_stored(turns, nodes, durability) --------------------------------------


def right_copies(turns, nodes, durability):
    if durability == "exit":
        return (nodes + 1) * turns * (turns + 1) // 2
    return (nodes + 1) * (nodes + 2) * turns * turns // 2


def ignores_durability(turns, nodes, durability):
    return (nodes + 1) * (nodes + 2) * turns * turns // 2


def exit_as_one_of_three(turns, nodes, durability):
    """The one-node case's 'exit: about a third' applied to every chain."""
    every = (nodes + 1) * (nodes + 2) * turns * turns // 2
    return every // 3 if durability == "exit" else every


def no_input_checkpoint(turns, nodes, durability):
    """Counts the input checkpoint of turn k as holding the whole list of turn k, like the last one."""
    if durability == "exit":
        return right_copies(turns, nodes, durability)
    return right_copies(turns, nodes, durability) + (nodes + 1) * turns


def one_checkpoint_per_node(turns, nodes, durability):
    """Forgets the checkpoint after the input is applied (step 0)."""
    if durability == "exit":
        return right_copies(turns, nodes, durability)
    return right_copies(turns, nodes, durability) - sum((nodes + 1) * (k - 1) + 1 for k in range(1, turns + 1))


def linear(turns, nodes, durability):
    return (nodes + 1) * turns


def returns_a_float(turns, nodes, durability):
    return float(right_copies(turns, nodes, durability))


def raises_on_exit(turns, nodes, durability):
    return {"sync": 1, "async": 1}[durability] * right_copies(turns, nodes, "sync")


def _pasted_lesson_loop(turns, nodes, durability):
    """Cell 'check_10' of section 'Where the square comes from' wrapped in a function, with 'durability=' added."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from helpers import thread_growth, travel_graphs

    saver = InMemorySaver()
    graph = travel_graphs.build_chat_graph(saver)
    for n in range(1, turns + 1):
        graph.invoke({"messages": [HumanMessage(f"Turn {n}: I'd like a window seat, please.")]},
                     {"configurable": {"thread_id": "t"}}, durability=durability)
    return thread_growth.message_copies(saver, "t")


def _pasted_chain_measure(turns, nodes, durability):
    """Cell 'slow_chat' of section 'A delete while a run is still going' (StateGraph, add_node, add_edge) in a
    loop of nodes, run as in cell 'modes_chat' (invoke with durability=), counted by thread_growth.message_copies."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    from helpers import thread_growth

    builder = StateGraph(MessagesState)
    previous = START
    for n in range(1, nodes + 1):
        builder.add_node(f"step-{n}", lambda state, n=n: {"messages": [AIMessage(f"step {n}")]})
        builder.add_edge(previous, f"step-{n}")
        previous = f"step-{n}"
    builder.add_edge(previous, END)
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    for n in range(1, turns + 1):
        graph.invoke({"messages": [HumanMessage(f"Turn {n}")]}, {"configurable": {"thread_id": "t"}},
                     durability=durability)
    return thread_growth.message_copies(saver, "t")


def _calls_the_checks_helper(turns, nodes, durability):
    """The check's own saved helper, helpers.checks.chapter_15.measured_copies."""
    from helpers.checks.chapter_15 import measured_copies

    return measured_copies(turns, nodes, durability)


# -- 15.2: apply_seat_changes(seats, writes) --------------------------------------------


def right_seats(seats, writes):
    result = dict(seats)
    for changes in writes:
        for passenger, seat in changes.items():
            if seat is None:
                result.pop(passenger, None)
            else:
                result[passenger] = seat
    return result


def last_write_only(seats, writes):
    return right_seats(seats, writes[-1:])


def mutates(seats, writes):
    for changes in writes:
        for passenger, seat in changes.items():
            if seat is None:
                seats.pop(passenger, None)
            else:
                seats[passenger] = seat
    return seats


def stores_none(seats, writes):
    result = dict(seats)
    for changes in writes:
        result.update(changes)
    return result


def first_write_wins(seats, writes):
    return right_seats(seats, list(reversed(writes)))


def returns_items(seats, writes):
    return sorted(right_seats(seats, writes).items())


def forgets_the_old_value(seats, writes):
    return right_seats({}, writes)


# -- 15.3: erase_user(saver, store, user_id) --------------------------------------------


def _threads_of(saver, user_id):
    return {c.config["configurable"]["thread_id"] for c in saver.list(None, filter={"user_id": user_id})}


def delete_threads_where(saver, **metadata):
    """The chapter's cell 'delete_threads_where' of section Retention, as shown."""
    doomed = sorted({c.config["configurable"]["thread_id"] for c in saver.list(None, filter=metadata)})
    for thread_id in doomed:
        saver.delete_thread(thread_id)
    return doomed


def right_erase(saver, store, user_id):
    for thread_id in _threads_of(saver, user_id):
        saver.delete_thread(thread_id)
    while items := store.search(("memories", user_id), limit=100):
        for item in items:
            store.delete(item.namespace, item.key)


def default_limit(saver, store, user_id):
    for thread_id in _threads_of(saver, user_id):
        saver.delete_thread(thread_id)
    for item in store.search(("memories", user_id)):
        store.delete(item.namespace, item.key)


def exact_namespace_only(saver, store, user_id):
    for thread_id in _threads_of(saver, user_id):
        saver.delete_thread(thread_id)
    for item in store.search(("memories", user_id), limit=1000):
        if item.namespace == ("memories", user_id):
            store.delete(item.namespace, item.key)


def memories_only(saver, store, user_id):
    for item in store.search(("memories", user_id), limit=1000):
        store.delete(item.namespace, item.key)


def every_thread(saver, store, user_id):
    for thread_id in {c.config["configurable"]["thread_id"] for c in saver.list(None)}:
        saver.delete_thread(thread_id)
    right_erase(saver, store, user_id)


def every_memory(saver, store, user_id):
    for thread_id in _threads_of(saver, user_id):
        saver.delete_thread(thread_id)
    for item in store.search(("memories",), limit=1000):
        store.delete(item.namespace, item.key)


def by_thread_name(saver, store, user_id):
    for thread_id in {c.config["configurable"]["thread_id"] for c in saver.list(None)}:
        if thread_id.startswith(user_id):
            saver.delete_thread(thread_id)
    right_erase(saver, store, user_id)


WRONG_ANSWERS = {
    "15.1": [
        ((ignores_durability,), "with durability='exit' each turn saves one checkpoint"),
        ((exit_as_one_of_three,), "with durability='exit'"),
        ((no_input_checkpoint,), "the input one, before the human message is applied"),
        ((one_checkpoint_per_node,), "one after it, then one after each node"),
        ((linear,), "a real run stores"),
        ((returns_a_float,), "expected an int"),
        ((raises_on_exit,), "raised KeyError on turns=4, nodes=3, durability='exit'"),
        ((42,), "expected a function"),
        ((_pasted_chain_measure,), "ran a graph: measuring is what the check does"),
    ],
    "15.2": [
        ((last_write_only,), "only the last write of the batch"),
        ((mutates,), "changed the dict it was given"),
        ((stores_none,), "does not store None"),
        ((first_write_wins,), "a later one wins"),
        ((returns_items,), "return the new dict"),
        ((forgets_the_old_value,), "not batching-invariant"),
        (("seats",), "expected a function"),
    ],
    "15.3": [
        ((default_limit,), "10 by default"),
        ((exact_namespace_only,), "namespaces below it"),
        ((memories_only,), "Ana's threads ['ana-1', 'ana-2'] are still there"),
        ((every_thread,), "other users' threads must stay"),
        ((every_memory,), "belongs to someone else"),
        ((by_thread_name,), "other users' threads must stay"),
        ((None,), "expected a function"),
    ],
}


def add_message_batch(messages, writes):
    """The chapter's cell 'add_message_batch' of section DeltaChannel, as shown."""
    return functools.reduce(add_messages, writes, messages)


# What a learner gets by pasting the nearest visible cell (or reading a visible number).
COPY_ATTACKS = {
    "15.1": [((_pasted_lesson_loop,), "cell 'check_10' (chapter 01's one-node assistant on an InMemorySaver) "
                                      "in a function, with durability= as in cell 'exit_only'"),
             ((lambda turns, nodes, durability: turns * (turns + 1) if durability == "exit" else 3 * turns * turns,),
              "the one-node counts of the chapter (1,200 for 20 turns, 3 checkpoints per turn), for any chain"),
             ((lambda turns, nodes, durability: 3 * turns * (turns + 1),),
              "the prose's 'each turn k stores about 6k messages', summed, for every mode"),
             ((_pasted_chain_measure,), "cell 'slow_chat' (a StateGraph built with add_node/add_edge) in a loop of "
                                        "nodes, invoked with durability= and counted by message_copies"),
             ((_calls_the_checks_helper,), "the check's own helper helpers.checks.chapter_15.measured_copies")],
    "15.2": [((add_message_batch,), "the cell 'add_message_batch' (functools.reduce over add_messages)"),
             ((lambda seats, writes: {**seats, **writes[-1]} if writes else seats,),
              "the cell 'last_write_only', turned into dicts")],
    "15.3": [((lambda saver, store, user_id: delete_threads_where(saver, user_id=user_id),),
              "the cell 'delete_threads_where' of section Retention, with user_id as the metadata")],
}


def test_wrong_answers_fail_with_their_hint():
    for exercise, cases in WRONG_ANSWERS.items():
        for args, hint in cases:
            result = evaluate(exercise, *args)
            assert result.status == "failed", (exercise, args, result)
            assert hint in result.message, (exercise, hint, result.message)


def test_right_answers_pass():
    assert evaluate("15.1", right_copies).status == PASSED
    assert evaluate("15.2", right_seats).status == PASSED
    assert evaluate("15.3", right_erase).status == PASSED
