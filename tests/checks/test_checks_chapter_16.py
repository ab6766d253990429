"""Chapter 16's checks: reference answers pass, wrong answers and pasted chapter cells fail with a hint."""

import shutil

from langgraph.checkpoint.base import WRITES_IDX_MAP

from helpers.checks import PASSED, evaluate

# -- reference answers (the solution cells) ----------------------------------------------


def delete_for_runs(saver, run_ids):
    doomed = set(run_ids)
    for thread_id in saver.thread_ids():
        for checkpoint_ns in saver.namespaces(thread_id):
            for checkpoint_id in saver.checkpoint_ids(thread_id, checkpoint_ns):
                saved = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                                          "checkpoint_id": checkpoint_id}})
                if saved.metadata.get("run_id") in doomed:
                    saver.remove_checkpoint(thread_id, checkpoint_ns, checkpoint_id)


def _uses_delta_channel(saver, thread_id):
    thread = {"configurable": {"thread_id": thread_id}}
    return any("counters_since_delta_snapshot" in saved.metadata for saved in saver.list(thread))


def prune(saver, thread_ids, strategy):
    if strategy == "keep_latest" and any(_uses_delta_channel(saver, t) for t in thread_ids):
        raise NotImplementedError("keep_latest can't prune threads that use a DeltaChannel")
    _keep_latest(saver, thread_ids, strategy)


def _keep_latest(saver, thread_ids, strategy):
    """keep_latest with the blob sweep, without the refusal: passes the suite, empties a delta thread."""
    _naive_prune(saver, thread_ids, strategy)
    if strategy == "delete":
        return
    for thread_id in thread_ids:
        for checkpoint_ns in saver.namespaces(thread_id):
            newest = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}})
            versions = newest.checkpoint["channel_versions"] if newest else {}
            named = {saver._blob_file(thread_id, checkpoint_ns, c, v) for c, v in versions.items()}
            for blob in (saver._ns_dir(thread_id, checkpoint_ns) / "blobs").glob("*.json"):
                if blob not in named:
                    blob.unlink()


def _prune_sweeps_every_blob(saver, thread_ids, strategy):
    """Deletes the kept checkpoint's blobs too."""
    _naive_prune(saver, thread_ids, strategy)
    if strategy == "keep_latest":
        for thread_id in thread_ids:
            for checkpoint_ns in saver.namespaces(thread_id):
                shutil.rmtree(saver._ns_dir(thread_id, checkpoint_ns) / "blobs", ignore_errors=True)


def _naive_prune(saver, thread_ids, strategy):
    """The helpers above the exercise put together, no blob sweep, no refusal: passes the suite."""
    for thread_id in thread_ids:
        if strategy == "delete":
            saver.delete_thread(thread_id)
            continue
        for checkpoint_ns in saver.namespaces(thread_id):
            for checkpoint_id in saver.checkpoint_ids(thread_id, checkpoint_ns)[:-1]:  # all but the newest
                saver.remove_checkpoint(thread_id, checkpoint_ns, checkpoint_id)


def put_writes(saver, config, writes, task_id, task_path=""):
    taken = {(row["task_id"], row["idx"]) for row in saver.read_journal(config)}
    rows = []
    for position, (channel, value) in enumerate(writes):
        idx = WRITES_IDX_MAP.get(channel, position)
        if idx >= 0 and (task_id, idx) in taken:
            continue
        rows.append({"task_id": task_id, "idx": idx, "channel": channel, "task_path": task_path,
                     "value": saver.encode(value)})
    saver.append_journal(config, rows)


# -- wrong answers -----------------------------------------------------------------------


def _delete_root_namespace_only(saver, run_ids):
    for thread_id in saver.thread_ids():
        for checkpoint_id in saver.checkpoint_ids(thread_id, ""):
            saved = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": "",
                                                      "checkpoint_id": checkpoint_id}})
            if saved.metadata.get("run_id") in run_ids:
                saver._checkpoint_file(thread_id, "", checkpoint_id).unlink()


def _delete_whole_threads_of_runs(saver, run_ids):
    for thread_id in saver.thread_ids():
        if any(s.metadata.get("run_id") in run_ids for s in saver.list({"configurable": {"thread_id": thread_id}})):
            saver.delete_thread(thread_id)


def _delete_newest_only(saver, run_ids):
    for thread_id in saver.thread_ids():
        for checkpoint_ns in saver.namespaces(thread_id):
            newest = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}})
            if newest and newest.metadata.get("run_id") in run_ids:
                newest_id = newest.config["configurable"]["checkpoint_id"]
                saver._checkpoint_file(thread_id, checkpoint_ns, newest_id).unlink()


def _delete_for_runs_raises(saver, run_ids):
    raise KeyError(run_ids[0]) if run_ids else None


def _prune_keep_oldest(saver, thread_ids, strategy):
    for thread_id in thread_ids:
        for checkpoint_ns in saver.namespaces(thread_id):
            for checkpoint_id in saver.checkpoint_ids(thread_id, checkpoint_ns)[1:]:
                saver._checkpoint_file(thread_id, checkpoint_ns, checkpoint_id).unlink()


def _prune_root_only(saver, thread_ids, strategy):
    for thread_id in thread_ids:
        if strategy == "delete":
            saver.delete_thread(thread_id)
            continue
        for checkpoint_id in saver.checkpoint_ids(thread_id, "")[:-1]:
            saver._checkpoint_file(thread_id, "", checkpoint_id).unlink()


def _prune_ignores_strategy(saver, thread_ids, strategy):
    prune(saver, thread_ids, "keep_latest")


def _prune_newest_across_namespaces(saver, thread_ids, strategy):
    """Keeps one checkpoint per thread, not one per namespace."""
    for thread_id in thread_ids:
        if strategy == "delete":
            saver.delete_thread(thread_id)
            continue
        everything = sorted((cid, ns) for ns in saver.namespaces(thread_id)
                            for cid in saver.checkpoint_ids(thread_id, ns))
        for checkpoint_id, checkpoint_ns in everything[:-1]:
            saver._checkpoint_file(thread_id, checkpoint_ns, checkpoint_id).unlink()


def _prune_refuses_too_late(saver, thread_ids, strategy):
    """Checks each thread only when its turn comes: the threads before the delta one are pruned already."""
    for thread_id in thread_ids:
        if strategy == "keep_latest" and _uses_delta_channel(saver, thread_id):
            raise NotImplementedError(thread_id)
        _keep_latest(saver, [thread_id], strategy)


def _prune_refuses_with_value_error(saver, thread_ids, strategy):
    if strategy == "keep_latest" and any(_uses_delta_channel(saver, t) for t in thread_ids):
        raise ValueError("DeltaChannel")
    _keep_latest(saver, thread_ids, strategy)


def _prune_refuses_delete_too(saver, thread_ids, strategy):
    if any(_uses_delta_channel(saver, t) for t in thread_ids):
        if strategy == "keep_latest":
            raise NotImplementedError("DeltaChannel")
        return
    _keep_latest(saver, thread_ids, strategy)


def _put_writes_no_dedup(saver, config, writes, task_id, task_path=""):
    rows = [{"task_id": task_id, "idx": i, "channel": c, "task_path": task_path, "value": saver.encode(v)}
            for i, (c, v) in enumerate(writes)]
    saver.append_journal(config, rows)


def _put_writes_positions_only(saver, config, writes, task_id, task_path=""):
    """Forgets WRITES_IDX_MAP: an error lands in slot 0, which the task's result already holds."""
    taken = {(row["task_id"], row["idx"]) for row in saver.read_journal(config)}
    rows = [{"task_id": task_id, "idx": i, "channel": c, "task_path": task_path, "value": saver.encode(v)}
            for i, (c, v) in enumerate(writes) if (task_id, i) not in taken]
    saver.append_journal(config, rows)


def _put_writes_special_never_replaced(saver, config, writes, task_id, task_path=""):
    taken = {(row["task_id"], row["idx"]) for row in saver.read_journal(config)}
    rows = []
    for position, (channel, value) in enumerate(writes):
        idx = WRITES_IDX_MAP.get(channel, position)
        if (task_id, idx) in taken:
            continue
        rows.append({"task_id": task_id, "idx": idx, "channel": channel, "task_path": task_path,
                     "value": saver.encode(value)})
    saver.append_journal(config, rows)


def _put_writes_drops_task_path(saver, config, writes, task_id, task_path=""):
    rows = [{"task_id": task_id, "idx": WRITES_IDX_MAP.get(c, i), "channel": c, "value": saver.encode(v)}
            for i, (c, v) in enumerate(writes)]
    saver.append_journal(config, rows)


def _put_writes_nothing(saver, config, writes, task_id, task_path=""):
    return None


WRONG_ANSWERS = {
    "16.1": [
        ((_delete_root_namespace_only,), "All namespaces cleaned"),
        ((_delete_whole_threads_of_runs,), "One run_id removed"),
        ((_delete_newest_only,), "'delete_for_runs' tests failed"),
        ((_delete_for_runs_raises,), "raised KeyError"),
        ((lambda saver, run_ids: None,), "test_delete_for_runs_single"),
        (("delete_for_runs",), "expected a function"),
    ],
    "16.2": [
        ((_prune_keep_oldest,), "test_prune_keep_latest_single_thread"),
        ((_prune_root_only,), "test_prune_keep_latest_across_namespaces"),
        ((_prune_ignores_strategy,), "test_prune_delete_all"),
        ((_prune_newest_across_namespaces,), "test_prune_keep_latest_across_namespaces"),
        ((lambda saver, thread_ids, strategy: None,), "'prune' tests failed"),
        ((lambda saver, thread_ids: None,), "raised TypeError"),
        ((_naive_prune,), "also delete the blob files that no kept checkpoint names"),
        ((_prune_sweeps_every_blob,), "that the kept checkpoint names"),
        ((_keep_latest,), "it uses a DeltaChannel"),
        ((_prune_refuses_too_late,), "check every listed thread first"),
        ((_prune_refuses_with_value_error,), "raised ValueError"),
        ((_prune_refuses_delete_too,), "strategy='delete' must remove a DeltaChannel thread too"),
    ],
    "16.3": [
        ((_put_writes_no_dedup,), "its first value stays"),
        ((_put_writes_positions_only,), "fixed slots in WRITES_IDX_MAP"),
        ((_put_writes_special_never_replaced,), "replaces the earlier"),
        ((_put_writes_drops_task_path,), "'put_writes' tests failed"),
        ((_put_writes_nothing,), "test_put_writes_basic"),
        (("put_writes",), "expected a function"),
    ],
}


# -- what a learner gets by pasting the nearest visible cell -------------------------------


def _pasted_delete_thread_for_runs(saver, run_ids):
    """FolderSaver.delete_thread's body, with run IDs where thread IDs were."""
    for run_id in run_ids:
        shutil.rmtree(saver._thread_dir(run_id), ignore_errors=True)


def _pasted_delete_thread_for_prune(saver, thread_ids, strategy):
    """FolderSaver.delete_thread, called for every thread: right for 'delete', wrong for 'keep_latest'."""
    for thread_id in thread_ids:
        saver.delete_thread(thread_id)


def _pasted_copy_thread_for_prune(saver, thread_ids, strategy):
    for thread_id in thread_ids:
        saver.copy_thread(thread_id, thread_id + "-copy")


def _pasted_folder_put_writes(saver, config, writes, task_id, task_path=""):
    """WritesSaver.put_writes with ``self`` renamed: one file per write, which the journal never reads."""
    from urllib.parse import quote

    thread_id = config["configurable"]["thread_id"]
    checkpoint_ns = config["configurable"].get("checkpoint_ns", "")
    folder = saver._writes_dir(thread_id, checkpoint_ns, config["configurable"]["checkpoint_id"])
    for position, (channel, value) in enumerate(writes):
        idx = WRITES_IDX_MAP.get(channel, position)
        path = folder / f"{quote(task_id, safe='')}.{idx}.json"
        if idx >= 0 and path.exists():
            continue
        saver._write_json(path, {"task_id": task_id, "idx": idx, "channel": channel,
                                 "task_path": task_path, "value": saver.encode(value)})


COPY_ATTACKS = {
    "16.1": [((_pasted_delete_thread_for_runs,), "cell 'Step 4' (FolderSaver.delete_thread), run IDs for threads")],
    "16.2": [((_pasted_delete_thread_for_prune,), "cell 'Step 4' (FolderSaver.delete_thread) for every thread"),
             ((_pasted_copy_thread_for_prune,), "cell 'Step 4' (FolderSaver.copy_thread)"),
             ((_naive_prune,), "the helpers listed above the exercises (namespaces, checkpoint_ids, "
                               "remove_checkpoint) put together as the first paragraph asks, without the refusal")],
    "16.3": [((_pasted_folder_put_writes,), "cell 'Step 3' (WritesSaver.put_writes), self renamed to saver")],
}


def test_reference_answers_pass():
    assert evaluate("16.1", delete_for_runs).status == PASSED, evaluate("16.1", delete_for_runs)
    assert evaluate("16.2", prune).status == PASSED, evaluate("16.2", prune)
    assert evaluate("16.3", put_writes).status == PASSED, evaluate("16.3", put_writes)


def test_stubs_are_not_attempted():
    for exercise in ("16.1", "16.2", "16.3"):
        assert evaluate(exercise, lambda *args: ...).status == "not-attempted", exercise
        assert evaluate(exercise, ...).status == "not-attempted", exercise


def test_pasting_the_nearest_visible_cell_does_not_pass():
    for exercise, attacks in COPY_ATTACKS.items():
        assert attacks, exercise
        for args, what in attacks:
            result = evaluate(exercise, *args)
            assert result.status != PASSED, f"{exercise}: pasting {what} passes: {result}"
