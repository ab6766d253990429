"""Wrong answers for chapter 05's exercises must fail with a hint (see test_checks_chapter_00)."""

from collections import Counter

from helpers.checks import PASSED, evaluate


def parent_right(ns):
    return "|".join(ns.split("|")[:-1]) if ns else None


def parent_root_blank(ns):
    return "|".join(ns.split("|")[:-1])


def parent_outermost(ns):
    return ns.split("|")[0] if "|" in ns else ("" if ns else None)


def parent_drops_ids(ns):
    return "|".join(segment.split(":")[0] for segment in ns.split("|")[:-1]) if ns else None


def parent_last_level(ns):
    return ns.split("|")[-1] if ns else None


def parent_as_list(ns):
    return ns.split("|")[:-1] if ns else None


def parent_from_ns_parts(ns):
    """The saved helper namespaces.ns_parts, as the old exercise used it: the node names."""
    from helpers.namespaces import ns_parts

    return [node for node, _ in ns_parts(ns)]


def parent_ns_shape(ns):
    """The saved helper namespaces.ns_shape, minus the last level: task ids printed as <task-id>."""
    from helpers.namespaces import ns_shape

    shape = ns_shape(ns)
    return None if not ns else "|".join(shape.split("|")[:-1])


def _path(ns):
    return tuple(segment.split(":")[0] for segment in ns.split("|")) if ns else ()


def _latest(items):
    latest = {}
    for t in items:
        level = _path(t.config["configurable"]["checkpoint_ns"])
        checkpoint_id = t.config["configurable"]["checkpoint_id"]
        latest[level] = max(latest.get(level, checkpoint_id), checkpoint_id)
    return latest


def latest_right(saver, thread_id):
    return _latest(saver.list({"configurable": {"thread_id": thread_id}}))


def latest_with_ns_parts(saver, thread_id):
    """Also right: the saved helper namespaces.ns_parts for the levels, the largest ID per level."""
    from helpers.namespaces import ns_parts

    latest = {}
    for t in saver.list({"configurable": {"thread_id": thread_id}}):
        level = tuple(node for node, _ in ns_parts(t.config["configurable"]["checkpoint_ns"]))
        latest[level] = max(latest.get(level, ""), t.config["configurable"]["checkpoint_id"])
    return latest


def levels_counted_with_ns_parts(saver, thread_id):
    """The old exercise's answer, the auditor's paste: ns_parts plus cell 'History per namespace''s saver.list call."""
    from helpers.namespaces import ns_parts

    return dict(Counter(tuple(n for n, _ in ns_parts(t.config["configurable"]["checkpoint_ns"]))
                        for t in saver.list({"configurable": {"thread_id": thread_id}})))


def latest_first_seen(saver, thread_id):
    """The first tuple saver.list gives per level: newest only within one namespace."""
    latest = {}
    for t in saver.list({"configurable": {"thread_id": thread_id}}):
        latest.setdefault(_path(t.config["configurable"]["checkpoint_ns"]), t.config["configurable"]["checkpoint_id"])
    return latest


def latest_oldest(saver, thread_id):
    oldest = {}
    for t in saver.list({"configurable": {"thread_id": thread_id}}):
        level = _path(t.config["configurable"]["checkpoint_ns"])
        oldest[level] = min(oldest.get(level, "~"), t.config["configurable"]["checkpoint_id"])
    return oldest


def latest_from_history(saver, thread_id):
    """get_state_history as in the cell 'History per namespace': the root namespace only."""
    from helpers.namespaces import build_trip_planner

    graph = build_trip_planner(saver)
    history = list(graph.get_state_history({"configurable": {"thread_id": thread_id}}))
    return {(): history[0].config["configurable"]["checkpoint_id"]}


def latest_every_thread(saver, thread_id):
    """saver.list(None), as namespace_rows reads it in the first run's cell: every thread."""
    return _latest(saver.list(None))


def latest_raw_namespaces(saver, thread_id):
    latest = {}
    for t in saver.list({"configurable": {"thread_id": thread_id}}):
        ns = t.config["configurable"]["checkpoint_ns"]
        latest[ns] = max(latest.get(ns, ""), t.config["configurable"]["checkpoint_id"])
    return latest


def latest_string_paths(saver, thread_id):
    return {"/".join(k) or "root": v for k, v in latest_right(saver, thread_id).items()}


def latest_configs(saver, thread_id):
    return {k: {"configurable": {"thread_id": thread_id, "checkpoint_id": v}}
            for k, v in latest_right(saver, thread_id).items()}


def levels_from_the_reading_cell(saver, thread_id):
    """The cell 'Reading a namespace', pasted: only the deepest namespace of the thread, split into levels."""
    deepest = max((t.config["configurable"]["checkpoint_ns"] for t in saver.list(
        {"configurable": {"thread_id": thread_id}})), key=len)
    return {tuple(segment.partition(":")[0] for segment in deepest.split("|")): 1}


def parent_from_the_reading_cell(ns):
    """The loop of the cell 'Reading a namespace', wrapped in a function: the node name of each level."""
    return [segment.partition(":")[0] for segment in ns.split("|")]


WRONG_ANSWERS = {
    "05.1": [
        ((parent_root_blank,), "return None"),
        ((parent_outermost,), "the outermost level"),
        ((parent_drops_ids,), "keep the task ids"),
        ((parent_last_level,), "the level itself"),
        ((parent_as_list,), "expected a str"),
        ((parent_ns_shape,), "keep the task ids"),
    ],
    "05.2": [
        (({None: 7, True: 3, False: 1},), "a new recheck:<task-id>"),
        (({None: 10, True: 4, False: 4},), "each run adds its own recheck:<task-id>"),
        (({None: 10, True: 6, False: 1},), "recheck keeps the default"),
        (({None: 10, True: 6},), "missing False"),
        (([10, 6, 4],), "expected a dict"),
        (({None: "10", True: 6, False: 4},), "expected an int"),
    ],
    "05.3": [
        ((latest_first_seen,), "sorts newest first only within one namespace"),
        ((latest_oldest,), "the newest has the largest ID"),
        ((latest_from_history,), "get_state_history lists one namespace"),
        ((latest_every_thread,), "other threads"),
        ((latest_raw_namespaces,), "raw namespaces"),
        ((latest_string_paths,), "use tuples of node names"),
        ((levels_counted_with_ns_parts,), "your values are int"),
        ((latest_configs,), "your values are dict"),
        ((levels_from_the_reading_cell,), "your values are int"),
        ((42,), "expected a function"),
    ],
    "05.4": [
        (({None: (1, 1), True: (1, 1), False: (2, 1)},), "the count of make_plan runs for checkpointer=None"),
        (({None: (2, 1), True: (2, 2), False: (2, 1)},), "checkpointer=False"),
        (({None: (2, 2), True: (2, 2), False: (3, 1)},), "the plan number for checkpointer=None"),
        (({None: (2, 1), True: (2, 1), False: (3, 1)},), "run 2 continues from run 1's plans_made"),
        (({None: (2, 1), True: (2, 2)},), "missing False"),
        (({None: 2, True: 2, False: 3},), "give a pair of ints"),
        (([2, 2, 3],), "expected a dict"),
    ],
}

# What a learner gets by pasting the nearest visible cell (or reading a visible table).
COPY_ATTACKS = {
    "05.1": [((parent_from_the_reading_cell,), "the loop of the cell 'Reading a namespace', wrapped in a function"),
             ((parent_from_ns_parts,), "the saved helper namespaces.ns_parts (the node names of each level)"),
             ((parent_ns_shape,), "the saved helper namespaces.ns_shape, minus its last level")],
    "05.2": [(({None: 5, True: 3, False: 1},), "the two-run tables of 'Predict, then run: checkpointer=None, "
                                                 "True, False' (1 + 2 + 2 namespaces under None)"),
             (({None: 7, True: 3, False: 1},), "those tables carried on to three runs, without recheck")],
    "05.3": [((levels_counted_with_ns_parts,), "the saved helper namespaces.ns_parts with the saver.list call of "
                                               "'History per namespace' (the old exercise's answer)"),
             ((latest_from_history,), "get_state_history(thread) from the cell 'History per namespace'"),
             ((latest_every_thread,), "saver.list(None), as namespace_rows reads it in the first run's cell"),
             ((levels_from_the_reading_cell,), "the cell 'Reading a namespace' (the deepest namespace only)")],
    "05.4": [(({None: (1, 1), True: (1, 1), False: (2, 1)},), "the counts of 'What a resume runs again' (one run)"),
             (({None: (2, 1), True: (2, 2), False: (2, 1)},), "the plans of the two-run prediction (no failure)")],
}


def test_level_and_plan_solutions_pass():
    assert evaluate("05.1", parent_right).status == PASSED
    assert evaluate("05.3", latest_right).status == PASSED
    assert evaluate("05.3", latest_with_ns_parts).status == PASSED
    assert evaluate("05.4", {None: (2, 1), True: (2, 2), False: (3, 1)}).status == PASSED
    assert evaluate("05.4", {"None": [2, 1], "True": (2, 2), "False": (3, 1)}).status == PASSED


def test_string_keys_are_accepted_for_05_2():
    assert evaluate("05.2", {"None": 10, "True": 6, "False": 4}).status == PASSED
