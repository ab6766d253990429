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


def _branch_cases() -> list[tuple[Any, dict[str, Any], str]]:
    """(graph, config, what): threads that never branched, were reopened (once, several times) or continued
    from an invented ID, all in one saver (so that each has neighbours)."""
    from langgraph.checkpoint.base.id import uuid6
    from langgraph.checkpoint.memory import InMemorySaver

    from helpers import travel_graphs

    saver = InMemorySaver()

    def thread(name: str) -> tuple[Any, dict[str, Any], list[str]]:
        graph = _chat_thread(saver, name)
        config = {"configurable": {"thread_id": name}}
        return graph, config, sorted(_ids(graph.get_state_history(config)))

    def reopen(graph: Any, config: dict[str, Any], checkpoint_id: str) -> list[str]:
        before = set(_ids(graph.get_state_history(config)))
        travel_graphs.say(graph, config["configurable"]["thread_id"], "Actually, which seat was it?",
                          checkpoint_id=checkpoint_id)
        return sorted(set(_ids(graph.get_state_history(config))) - before)

    graph, config, _ = thread("t-plain")
    cases = [(graph, config, "a thread that never branched")]
    for at in (2, 4):   # the end of turn 1, and the reply step of turn 2
        graph, config, old = thread(f"t-reopened-{at}")
        reopen(graph, config, old[at])
        cases.append((graph, config, f"a thread reopened once, at its checkpoint C{at}"))
    graph, config, old = thread("t-reopened-thrice")
    first = reopen(graph, config, old[2])       # a branch from C2 ...
    reopen(graph, config, first[1])             # ... a branch from that branch ...
    reopen(graph, config, old[4])               # ... and the latest state from C4
    cases.append((graph, config, "a thread reopened at C2, then on that new branch, then at C4"))
    graph, config, _ = thread("t-invented")
    travel_graphs.say(graph, "t-invented", "Which seat do I prefer?", checkpoint_id=str(uuid6(clock_seq=3)))
    cases.append((graph, config, "the invented-ID thread (its new branch names a parent the saver does not store)"))
    return cases


def _abandoned_truth(graph: Any, config: dict[str, Any]) -> tuple[dict[str, str | None], list[str], dict[str, str]]:
    """(tip -> fork point, the latest state's path, id -> parent id) read from the thread's stored tuples."""
    parent = {}
    for item in graph.checkpointer.list({"configurable": {**config["configurable"], "checkpoint_ns": ""}}):
        parent[item.config["configurable"]["checkpoint_id"]] = (
            item.parent_config["configurable"]["checkpoint_id"] if item.parent_config else None)

    def ancestors(checkpoint_id: str) -> list[str]:
        chain = []
        while checkpoint_id in parent:
            chain.append(checkpoint_id)
            checkpoint_id = parent[checkpoint_id]
        return chain

    path = ancestors(max(parent))
    on_path = set(path)
    tips = set(parent) - set(parent.values()) - {max(parent)}
    return ({tip: next((i for i in ancestors(tip) if i in on_path), None) for tip in tips}, path, parent)


@exercise("04.1")
def check_abandoned_branches(abandoned_branches):
    for graph, config, what in _branch_cases():
        truth, path, parent = _abandoned_truth(graph, config)
        got = call_answer(abandoned_branches, graph, dict(config), what="abandoned_branches(graph, config)",
                          case=what)
        expect_type(got, dict, "a dict from each tip's checkpoint ID to its fork point's ID (or None)")
        if got == truth:
            continue
        labels = {i: f"C{n}" for n, i in enumerate(sorted(parent))}

        def shown(answer: dict, labels: dict[str, str] = labels) -> str:
            return "{" + ", ".join(f"{labels[k]}: {'None' if answer[k] is None else labels[answer[k]]}"
                                   for k in sorted(answer)) + "}"

        def named(ids: Any, labels: dict[str, str] = labels) -> str:
            return "[" + ", ".join(labels[i] for i in sorted(ids)) + "]" if ids else "none"

        if not all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in got.items()):
            raise Fail(f"for {what} return checkpoint IDs as strings (snapshot.config['configurable']"
                       "['checkpoint_id']) for the keys, and an ID or None for each value")
        if any(k not in parent or (v is not None and v not in parent) for k, v in got.items()):
            raise Fail(f"for {what} your dict holds an ID the saver does not store in this thread: a fork point is a "
                       "stored checkpoint on the latest state's path, or None")
        if path[0] in got:
            raise Fail(f"for {what} you listed the latest checkpoint ({labels[path[0]]}); it is the tip of the branch "
                       "the thread is on, not one the user left behind")
        if set(got) > set(truth):
            raise Fail(f"for {what} you listed {len(got)} checkpoints; the tips are only the checkpoints that no "
                       f"stored checkpoint names as its parent (here {named(truth)})")
        if set(got) < set(truth) and all(truth[k] == v for k, v in got.items()) and any(
                truth[t] is None for t in set(truth) - set(got)):
            raise Fail(f"for {what} you left out a tip whose branch never meets the latest state's path; list it "
                       "with the fork point None")
        if set(got) != set(truth):
            raise Fail(f"for {what} your tips are {named(got)}; the thread's abandoned tips are {named(truth)}: "
                       "stored checkpoints that no stored checkpoint names as its parent, the latest one excepted")
        if all(got[t] == parent[t] for t in truth):
            raise Fail(f"for {what} you gave each tip its own parent ({shown(got)}); walk further up through "
                       "parent_config, to the tip's nearest ancestor that is on the latest state's path: "
                       f"{shown(truth)}")
        raise Fail(f"for {what} you returned {shown(got)}, expected {shown(truth)}: from each tip, follow "
                   "parent_config (while the parent is stored) to the first checkpoint on the path from the latest "
                   "checkpoint back through its parents; None if there is none")
    return ("every abandoned tip with its fork point: reopened once, reopened on an old branch, cut off by an "
            "invented ID")


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
