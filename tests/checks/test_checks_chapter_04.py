"""Wrong answers for chapter 04's exercises must fail with a hint (see test_checks_chapter_00)."""

import uuid

from helpers.checks import PASSED, evaluate


def _cid(snapshot_or_config):
    config = getattr(snapshot_or_config, "config", snapshot_or_config)
    return config["configurable"]["checkpoint_id"]


def _parents(graph, config):
    """checkpoint id -> parent id (None for a first checkpoint) of the thread's root namespace."""
    return {_cid(s): (_cid(s.parent_config) if s.parent_config else None) for s in graph.get_state_history(config)}


def _ancestors(parents, checkpoint_id):
    chain = []
    while checkpoint_id in parents:
        chain.append(checkpoint_id)
        checkpoint_id = parents[checkpoint_id]
    return chain


def _tips(parents, latest):
    return set(parents) - set(parents.values()) - {latest}


def abandoned_right(graph, config):
    parents = _parents(graph, config)
    on_path = set(_ancestors(parents, _cid(graph.get_state(config))))
    return {tip: next((i for i in _ancestors(parents, tip) if i in on_path), None)
            for tip in _tips(parents, _cid(graph.get_state(config)))}


def abandoned_with_walk_parent_chain(graph, config):
    """Also right: the saved helper walk_parent_chain, run from each tip."""
    from helpers.checkpoint_ids import walk_parent_chain

    on_path = {row["id"] for row in walk_parent_chain(graph.checkpointer, config)}
    parents = _parents(graph, config)
    result = {}
    for tip in _tips(parents, _cid(graph.get_state(config))):
        rows = walk_parent_chain(graph.checkpointer, {"configurable": {**config["configurable"], "checkpoint_id": tip}})
        result[tip] = next((row["id"] for row in rows if row["id"] in on_path), None)
    return result


def off_branch_ids(graph, config):
    """The old exercise's answer, the auditor's paste: walk_parent_chain's ids, and the sorted history without them."""
    from helpers.checkpoint_ids import walk_parent_chain

    on = {row["id"] for row in walk_parent_chain(graph.checkpointer, config)}
    return sorted(_cid(s) for s in graph.get_state_history(config) if _cid(s) not in on)


def off_whole_history(graph, config):
    """The ids of cell 'A thread's checkpoint IDs': the whole history, sorted by ID."""
    return sorted(_cid(s) for s in graph.get_state_history(config))


def off_walk_parent_chain(graph, config):
    """The cell 'walk_parent_chain', pasted: rows, newest first."""
    from helpers.checkpoint_ids import walk_parent_chain

    return walk_parent_chain(graph.checkpointer, config)


def abandoned_every_off_checkpoint(graph, config):
    """Every checkpoint off the path as a key, not only the tips."""
    answer = abandoned_right(graph, config)
    forks = {}
    for tip, fork in answer.items():
        for i in _ancestors(_parents(graph, config), tip):
            if i == fork:
                break
            forks[i] = fork
    return forks


def abandoned_with_latest(graph, config):
    return {**abandoned_right(graph, config), _cid(graph.get_state(config)): None}


def abandoned_tip_parent(graph, config):
    """walk_parent_chain run from each tip, its first row's parent: the tip's own parent, not the fork point."""
    from helpers.checkpoint_ids import walk_parent_chain

    return {tip: walk_parent_chain(graph.checkpointer, {"configurable": {**config["configurable"],
                                                                         "checkpoint_id": tip}})[0]["parent_id"]
            for tip in abandoned_right(graph, config)}


def abandoned_by_id_order(graph, config):
    """Fork point read from ID order: the newest checkpoint on the path older than the tip."""
    parents = _parents(graph, config)
    on_path = _ancestors(parents, _cid(graph.get_state(config)))
    return {tip: max((i for i in on_path if i < tip), default=None) for tip in _tips(parents, on_path[0])}


def abandoned_skips_unjoined(graph, config):
    return {tip: fork for tip, fork in abandoned_right(graph, config).items() if fork is not None}


def abandoned_with_labels(graph, config):
    labels = {i: f"C{n}" for n, i in enumerate(sorted(_parents(graph, config)))}
    return {labels[k]: (labels[v] if v else None) for k, v in abandoned_right(graph, config).items()}


def _migrate_with(mint):
    from helpers.checkpoint_ids import copy_with_new_ids

    def migrate(source, target, thread_id):
        copy_with_new_ids(source, target, thread_id, thread_id, mint)
    return migrate


def _kept_ids_minter(source, thread_id):
    ids = sorted(t.checkpoint["id"] for t in source.list({"configurable": {"thread_id": thread_id,
                                                                          "checkpoint_ns": ""}}))
    return iter(ids).__next__


def migrate_kept_ids_no_writes(source, target, thread_id):
    """The cell 'copy_with_new_ids' with the 'kept' minter of the next cell: original IDs, no pending writes."""
    _migrate_with(_kept_ids_minter(source, thread_id))(source, target, thread_id)


def migrate_uuid6(source, target, thread_id):
    from langgraph.checkpoint.base.id import uuid6

    _migrate_with(lambda: uuid6(clock_seq=0))(source, target, thread_id)


def migrate_right(source, target, thread_id):
    root = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    for item in sorted(source.list(root), key=lambda t: t.checkpoint["id"]):
        stored = target.put(item.parent_config or root, item.checkpoint, item.metadata,
                            item.checkpoint["channel_versions"])
        by_task = {}
        for task_id, channel, value in item.pending_writes or []:
            by_task.setdefault(task_id, []).append((channel, value))
        for task_id, writes in by_task.items():
            target.put_writes(stored, writes, task_id)


def migrate_no_parents(source, target, thread_id):
    root = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    for item in sorted(source.list(root), key=lambda t: t.checkpoint["id"]):
        target.put(root, item.checkpoint, item.metadata, item.checkpoint["channel_versions"])


def migrate_latest_only(source, target, thread_id):
    item = source.get_tuple({"configurable": {"thread_id": thread_id}})
    stored = target.put(item.parent_config, item.checkpoint, item.metadata, item.checkpoint["channel_versions"])
    for task_id, channel, value in item.pending_writes:
        target.put_writes(stored, [(channel, value)], task_id)


def migrate_every_thread(source, target, thread_id):
    for other in sorted({t.config["configurable"]["thread_id"] for t in source.list(None)}):
        migrate_right(source, target, other)


def migrate_does_nothing(source, target, thread_id):
    return None


def _config(thread_id, checkpoint_id):
    return {"configurable": {"thread_id": thread_id, "checkpoint_id": checkpoint_id}}


def _owned_thread(conversations, user_id, conversation_id):
    row = conversations.get(conversation_id)
    if row is None or row["user_id"] != user_id:
        raise PermissionError("not yours")
    return row["thread_id"]


def guard_right(saver, conversations, user_id, conversation_id, checkpoint_id):
    config = _config(_owned_thread(conversations, user_id, conversation_id), checkpoint_id)
    if saver.get_tuple(config) is None:
        raise LookupError(checkpoint_id)
    return config


def guard_no_owner_check(saver, conversations, user_id, conversation_id, checkpoint_id):
    row = conversations.get(conversation_id)
    if row is None:
        raise PermissionError("unknown")
    config = _config(row["thread_id"], checkpoint_id)
    if saver.get_tuple(config) is None:
        raise LookupError(checkpoint_id)
    return config


def guard_conversation_as_thread(saver, conversations, user_id, conversation_id, checkpoint_id):
    _owned_thread(conversations, user_id, conversation_id)
    return _config(conversation_id, checkpoint_id)


def guard_key_error_for_unknown(saver, conversations, user_id, conversation_id, checkpoint_id):
    row = conversations[conversation_id]
    if row["user_id"] != user_id:
        raise PermissionError("not yours")
    return guard_right(saver, conversations, user_id, conversation_id, checkpoint_id)


def guard_format_only(saver, conversations, user_id, conversation_id, checkpoint_id):
    thread = _owned_thread(conversations, user_id, conversation_id)
    if uuid.UUID(checkpoint_id).version != 6:
        raise LookupError(checkpoint_id)
    return _config(thread, checkpoint_id)


def guard_any_thread(saver, conversations, user_id, conversation_id, checkpoint_id):
    thread = _owned_thread(conversations, user_id, conversation_id)
    if not any(t.config["configurable"]["checkpoint_id"] == checkpoint_id for t in saver.list(None)):
        raise LookupError(checkpoint_id)
    return _config(thread, checkpoint_id)


def guard_returns_none(saver, conversations, user_id, conversation_id, checkpoint_id):
    config = _config(_owned_thread(conversations, user_id, conversation_id), checkpoint_id)
    return config if saver.get_tuple(config) else None


def guard_value_error(saver, conversations, user_id, conversation_id, checkpoint_id):
    config = _config(_owned_thread(conversations, user_id, conversation_id), checkpoint_id)
    if saver.get_tuple(config) is None:
        raise ValueError("unknown checkpoint")
    return config


def guard_drops_id(saver, conversations, user_id, conversation_id, checkpoint_id):
    config = guard_right(saver, conversations, user_id, conversation_id, checkpoint_id)
    return {"configurable": {"thread_id": config["configurable"]["thread_id"]}}


def guard_rejects_all(saver, conversations, user_id, conversation_id, checkpoint_id):
    raise LookupError(checkpoint_id)


WRONG_ANSWERS = {
    "04.1": [
        ((off_branch_ids,), "expected a dict"),
        ((abandoned_every_off_checkpoint,), "the tips are only the checkpoints that no stored checkpoint names"),
        ((abandoned_with_latest,), "you listed the latest checkpoint"),
        ((abandoned_tip_parent,), "you gave each tip its own parent"),
        ((abandoned_by_id_order,), "follow parent_config"),
        ((abandoned_skips_unjoined,), "with the fork point None"),
        ((abandoned_with_labels,), "does not store"),
        (("C8",), "expected a function"),
    ],
    "04.2": [
        ((migrate_uuid6,), "new checkpoint IDs"),
        ((migrate_kept_ids_no_writes,), "lost its pending writes"),
        ((migrate_no_parents,), "pass the tuple's parent_config"),
        ((migrate_latest_only,), "copy every checkpoint of the root namespace"),
        ((migrate_every_thread,), "copied another thread"),
        ((migrate_does_nothing,), "holds no checkpoint"),
        ((42,), "expected a function"),
    ],
    "04.3": [
        ((guard_no_owner_check,), "the conversation is not Bo's"),
        ((guard_conversation_as_thread,), "conversation id as the thread id"),
        ((guard_key_error_for_unknown,), "raised KeyError; raise PermissionError"),
        ((guard_format_only,), "well-formed ID can still be invented"),
        ((guard_any_thread,), "in another thread"),
        ((guard_returns_none,), "returned None"),
        ((guard_value_error,), "raised ValueError"),
        ((guard_drops_id,), "'checkpoint_id': checkpoint_id"),
        ((guard_rejects_all,), "a stored checkpoint of a conversation the caller owns"),
        (({"configurable": {}},), "expected a function"),
    ],
}


def guard_from_the_ghost_cell(saver, conversations, user_id, conversation_id, checkpoint_id):
    """The config of the cell 'A checkpoint ID you invent', built from the conversation's thread, unchecked."""
    return _config(conversations[conversation_id]["thread_id"], checkpoint_id)


# What a learner gets by pasting the nearest visible cell.
COPY_ATTACKS = {
    "04.1": [((off_branch_ids,), "the saved helper walk_parent_chain plus a filter: the history ids off its chain "
                                 "(the old exercise's answer)"),
             ((abandoned_tip_parent,), "walk_parent_chain (cell 'The parent chain') run from each tip: its parent"),
             ((off_walk_parent_chain,), "the cell that defines walk_parent_chain, called on graph.checkpointer"),
             ((off_whole_history,), "the checkpoint ids of the first cell, sorted from get_state_history")],
    "04.2": [((migrate_uuid6,), "copy_with_new_ids with LangGraph's uuid6 as the minter"),
             ((migrate_kept_ids_no_writes,), "copy_with_new_ids with the 'kept' minter (the original ids)")],
    "04.3": [((guard_from_the_ghost_cell,), "the 'ghost' config of the cell 'A checkpoint ID you invent'")],
}


def test_branch_and_migration_solutions_pass():
    assert evaluate("04.1", abandoned_right).status == PASSED
    assert evaluate("04.1", abandoned_with_walk_parent_chain).status == PASSED
    assert evaluate("04.2", migrate_right).status == PASSED


def test_guard_solution_and_keyerror_pass():
    def guard_key_error(saver, conversations, user_id, conversation_id, checkpoint_id):
        config = _config(_owned_thread(conversations, user_id, conversation_id), checkpoint_id)
        if saver.get_tuple(config) is None:
            raise KeyError(checkpoint_id)
        return config
    assert evaluate("04.3", guard_right).status == PASSED
    assert evaluate("04.3", guard_key_error).status == PASSED


def test_abandoned_branch_cases_are_the_ones_the_prompt_describes():
    """The checker's own truth, in labels (C0 oldest): guards _abandoned_truth against a regression."""
    from helpers.checks.chapter_04 import _abandoned_truth, _branch_cases

    seen = []
    for graph, config, _what in _branch_cases():
        truth, _path, parents = _abandoned_truth(graph, config)
        labels = {i: f"C{n}" for n, i in enumerate(sorted(parents))}
        seen.append({labels[k]: labels.get(v) for k, v in truth.items()})
        assert truth == abandoned_right(graph, config)
    assert seen == [{}, {"C5": "C2"}, {"C5": "C4"}, {"C5": "C4", "C8": "C2", "C11": "C2"}, {"C5": None}]
