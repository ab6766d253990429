"""Checks for chapter 04 (checkpoint IDs)."""

from __future__ import annotations

from typing import Any

from .protocol import Fail, NotAttempted, call_answer, exercise, expect_type


def _chat_thread(saver: Any, thread_id: str) -> Any:
    from helpers import travel_graphs

    graph = travel_graphs.build_chat_graph(saver)
    travel_graphs.say(graph, thread_id, "I prefer a window seat")
    travel_graphs.say(graph, thread_id, "Which seat do I prefer?")
    return graph


def _ids(snapshots: Any) -> list[str]:
    return [s.config["configurable"]["checkpoint_id"] for s in snapshots]


def _branch_cases() -> list[tuple[Any, dict[str, Any], list[str], list[str], str]]:
    """(graph, config, branch oldest first, every id of the thread, what) for threads with and without a branch."""
    from langgraph.checkpoint.base.id import uuid6
    from langgraph.checkpoint.memory import InMemorySaver

    from helpers import travel_graphs

    cases = []
    saver = InMemorySaver()
    plain = _chat_thread(saver, "t-plain")
    config = {"configurable": {"thread_id": "t-plain"}}
    everything = sorted(_ids(plain.get_state_history(config)))
    cases.append((plain, config, everything, everything, "a thread that never branched"))
    for reopened in (2, 4):  # the end of turn 1, and the reply step of turn 2
        thread = f"t-reopened-{reopened}"
        graph = _chat_thread(saver, thread)
        config = {"configurable": {"thread_id": thread}}
        old = sorted(_ids(graph.get_state_history(config)))
        travel_graphs.say(graph, thread, "Actually, which seat was it?", checkpoint_id=old[reopened])
        everything = sorted(_ids(graph.get_state_history(config)))
        new = [i for i in everything if i not in old]
        cases.append((graph, config, old[:reopened + 1] + new, everything,
                      f"a thread reopened at its checkpoint C{reopened} and continued"))
    graph = _chat_thread(saver, "t-invented")
    config = {"configurable": {"thread_id": "t-invented"}}
    old = set(_ids(graph.get_state_history(config)))
    travel_graphs.say(graph, "t-invented", "Which seat do I prefer?", checkpoint_id=str(uuid6(clock_seq=3)))
    everything = sorted(_ids(graph.get_state_history(config)))
    cases.append((graph, config, [i for i in everything if i not in old], everything,
                  "the invented-ID thread (its new branch names a parent the saver does not store)"))
    return cases


@exercise("04.1")
def check_off_branch(off_branch):
    for graph, config, branch, everything, what in _branch_cases():
        truth = [i for i in everything if i not in set(branch)]
        got = call_answer(off_branch, graph, dict(config), what="off_branch(graph, config)", case=what)
        expect_type(got, list, "the checkpoint IDs, oldest first")
        if got and not all(isinstance(i, str) for i in got):
            kinds = sorted({type(i).__name__ for i in got})
            raise Fail(f"for {what} your list holds {', '.join(kinds)}; return the checkpoint IDs as strings, "
                       "e.g. snapshot.config['configurable']['checkpoint_id']")
        if got == truth:
            continue
        labels = {i: f"C{n}" for n, i in enumerate(everything)}
        shown = [labels.get(i, "(not stored)") for i in got]
        want = [labels[i] for i in truth]
        if got and got == truth[::-1]:
            raise Fail(f"for {what} you returned the right checkpoints newest first; return them oldest first")
        if set(got) == set(branch):
            raise Fail(f"for {what} you returned {shown}, the checkpoints the latest state is built on (its parent "
                       f"chain); the tool wants the others, {want or 'none'}: every stored checkpoint of the thread "
                       "that is not on that chain")
        if any(i not in labels for i in got):
            raise Fail(f"for {what} your list holds an ID the saver does not store; list only checkpoints of the "
                       "thread's history")
        if set(got) == set(everything):
            raise Fail(f"for {what} you listed every checkpoint of the thread ({len(everything)}); leave out the "
                       "ones on the path from the latest checkpoint (get_state(config)) through parent_config: "
                       f"that leaves {want or 'none'}")
        raise Fail(f"for {what} you returned {shown}, expected {want or 'none'}: take the thread's checkpoints "
                   "(get_state_history), remove those on the path from get_state(config) through parent_config "
                   "while the parent is stored, and sort the rest by ID")
    return "the checkpoints off the latest state's path, oldest first, across reopened points and an unknown parent"


def _failed_thread(saver: Any, thread_id: str) -> None:
    """A booking thread with one finished run, then a run whose quote times out (a pending error write)."""
    from helpers.step_timeline import build_booking_flow, quote

    failures = {"left": 0}

    def flaky_quote(state):
        if failures["left"]:
            failures["left"] -= 1
            raise TimeoutError("the quote service timed out")
        return quote(state)

    graph = build_booking_flow(saver, quote_node=flaky_quote)
    config = {"configurable": {"thread_id": thread_id}}
    graph.invoke({"route": "BER-LIS"}, config)
    failures["left"] = 1
    try:
        graph.invoke({"route": "BER-SYD"}, config)
    except TimeoutError:
        pass


def _shape(saver: Any, thread_id: str) -> list[tuple[Any, ...]]:
    rows = []
    for item in saver.list({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}):
        parent = item.parent_config["configurable"]["checkpoint_id"] if item.parent_config else None
        writes = sorted((task, channel, repr(_canonical(value))) for task, channel, value in item.pending_writes or [])
        rows.append((item.checkpoint["id"], parent, item.metadata.get("step"), writes,
                     repr(sorted((k, _canonical(v)) for k, v in item.checkpoint["channel_values"].items()))))
    return sorted(rows)


def _canonical(value: Any) -> Any:
    """``value`` with every set sorted: two equal sets can print in different orders (a join
    channel holds one), so comparing their reprs would depend on how each set was built."""
    if isinstance(value, (set, frozenset)):
        return ("set", sorted(map(repr, value)))
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_canonical(v) for v in value)
    return value


@exercise("04.2")
def check_migrate_thread(migrate_thread):
    import sqlite3

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    source = InMemorySaver()
    _failed_thread(source, "trip-7")
    _failed_thread(source, "trip-8")               # another thread in the same store: not to be moved
    truth = _shape(source, "trip-7")
    connection = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        for name, target in (("an InMemorySaver", InMemorySaver()), ("a SqliteSaver", SqliteSaver(connection))):
            call_answer(migrate_thread, source, target, "trip-7", what="migrate_thread(source, target, thread_id)",
                        case=f"a failed booking thread moved into {name}")
            if _shape(source, "trip-7") != truth:
                raise Fail("migrate_thread changed the source thread; only read from source")
            got = _shape(target, "trip-7")
            if not got:
                raise Fail(f"after migrate_thread, {name} holds no checkpoint of the thread; store each one with "
                           "target.put(config, checkpoint, metadata, new_versions)")
            ids_got, ids_truth = [r[0] for r in got], [r[0] for r in truth]
            if not set(ids_got) & set(ids_truth):
                raise Fail(f"the copy in {name} has new checkpoint IDs: something minted them. A checkpoint's ID "
                           "is its checkpoint['id']; keep it, so that order, 'latest' and every parent link stay "
                           "the thread's own")
            if set(ids_got) != set(ids_truth):
                raise Fail(f"the copy in {name} has {len(ids_got)} checkpoints, the thread has {len(ids_truth)}: "
                           "copy every checkpoint of the root namespace (source.list of the thread), keeping "
                           "their IDs")
            by_id = {r[0]: r for r in got}
            for row in truth:
                if by_id[row[0]][1] != row[1]:
                    raise Fail(f"in {name} the checkpoint of step {row[2]} has the parent {by_id[row[0]][1]!r} instead "
                               "of its own parent: put() records the checkpoint_id of the config it is given as the "
                               "parent, so pass the tuple's parent_config (the thread's config for the first)")
            for row in truth:
                if by_id[row[0]][4] != row[4]:
                    raise Fail(f"in {name} the checkpoint of step {row[2]} holds other channel values; store the "
                               "tuple's checkpoint as it is, with its channel_versions as new_versions")
            for row in truth:
                if by_id[row[0]][3] != row[3]:
                    raise Fail(f"in {name} the checkpoint of step {row[2]} lost its pending writes "
                               f"({len(row[3])} in the source, {len(by_id[row[0]][3])} in the copy): store them with "
                               "target.put_writes(<the config put returned>, [(channel, value), ...], task_id), one "
                               "call per task ID. Without them a resume re-runs tasks that had finished, and the "
                               "failed task's error is gone")
            if _shape(target, "trip-8"):
                raise Fail(f"migrate_thread copied another thread into {name}; copy only thread_id's checkpoints")
    finally:
        connection.close()
    return "same IDs, parents, values and pending writes in both savers: the thread moved, nothing was minted"


def _guard_fixture() -> dict[str, Any]:
    """Two users' conversations on one saver: real, foreign and invented checkpoint IDs."""
    from langgraph.checkpoint.base.id import uuid6
    from langgraph.checkpoint.memory import InMemorySaver

    from helpers import travel_graphs

    saver = InMemorySaver()
    graph = travel_graphs.build_chat_graph(saver)
    conversations = {"c-ana": {"user_id": "ana", "thread_id": "t-7f3a"},
                     "c-bo": {"user_id": "bo", "thread_id": "t-19c2"}}
    for row in conversations.values():
        travel_graphs.say(graph, row["thread_id"], "I prefer a window seat")
    ids = {c: [s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(
        {"configurable": {"thread_id": row["thread_id"]}})] for c, row in conversations.items()}
    return {"saver": saver, "conversations": conversations, "real": ids["c-ana"][1], "foreign": ids["c-bo"][0],
            "invented": str(uuid6(clock_seq=1))}


WHAT = "checked_config(saver, conversations, user_id, conversation_id, checkpoint_id)"


def _refused(checked_config: Any, fixture: dict[str, Any], user_id: str, conversation_id: str, checkpoint_id: str,
             error: type[Exception], case: str, hint: str) -> None:
    try:
        got = call_answer(checked_config, fixture["saver"], dict(fixture["conversations"]), user_id, conversation_id,
                          checkpoint_id, what=WHAT)
    except (Fail, NotAttempted):
        raise
    except error:
        return
    except Exception as exc:
        raise Fail(f"for {case} you raised {type(exc).__name__}; raise {error.__name__} there") from None
    if got is None:
        raise Fail(f"for {case} you returned None; raise {error.__name__} instead, "
                   "so the caller cannot go on by mistake")
    raise Fail(f"for {case} you returned a config; {hint}")


@exercise("04.3")
def check_checked_config(checked_config):
    fixture = _guard_fixture()
    try:
        got = call_answer(checked_config, fixture["saver"], dict(fixture["conversations"]), "ana", "c-ana",
                          fixture["real"], what=WHAT)
    except (Fail, NotAttempted):
        raise
    except Exception as exc:
        raise Fail(f"for a real checkpoint of Ana's own conversation you raised {type(exc).__name__}: {exc}; "
                   "a stored checkpoint of a conversation the caller owns must give back its config") from None
    expect_type(got, dict, "the invoke config")
    inner = got.get("configurable")
    thread = inner.get("thread_id") if isinstance(inner, dict) else None
    if thread == "c-ana":
        raise Fail("you used the conversation id as the thread id; look the thread up in "
                   "conversations[conversation_id]['thread_id']")
    if thread != "t-7f3a" or inner.get("checkpoint_id") != fixture["real"]:
        raise Fail("return {'configurable': {'thread_id': conversations[conversation_id]['thread_id'], "
                   "'checkpoint_id': checkpoint_id}} for a stored checkpoint of the caller's conversation")
    _refused(checked_config, fixture, "bo", "c-ana", fixture["real"], PermissionError,
             "Bo asking for Ana's conversation", "that checkpoint exists, but the conversation is not Bo's: check "
             "conversations[conversation_id]['user_id'] against user_id before anything else")
    _refused(checked_config, fixture, "ana", "c-nobody", fixture["real"], PermissionError, "an unknown conversation",
             "refuse it with PermissionError, the same error as for another user's conversation")
    _refused(checked_config, fixture, "ana", "c-ana", fixture["invented"], LookupError,
             "an invented (well-formed uuid6) ID", "a well-formed ID can still be invented: ask the saver with "
             "saver.get_tuple(config)")
    _refused(checked_config, fixture, "ana", "c-ana", fixture["foreign"], LookupError, "an ID from Bo's thread",
             "that ID exists, but in another thread: look it up with this conversation's thread_id in the config, "
             "not across all threads")
    return "owned conversations only; invented and foreign checkpoint IDs are refused with LookupError"
