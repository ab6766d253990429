"""Wrong answers for chapter 05's exercises must fail with a hint (see test_checks_chapter_00)."""

from collections import Counter

from helpers.checks import PASSED, evaluate


def path_split_colon(ns):
    return ns.split(":")


def path_root_blank(ns):
    return [segment.split(":")[0] for segment in ns.split("|")]


def path_keeps_ids(ns):
    return ns.split("|") if ns else []


def path_last_only(ns):
    return [ns.split("|")[-1].split(":")[0]] if ns else []


def path_as_string(ns):
    return ns.replace("|", "/")


def _path(ns):
    return tuple(segment.split(":")[0] for segment in ns.split("|")) if ns else ()


def levels_right(saver, thread_id):
    counts = Counter(_path(t.config["configurable"]["checkpoint_ns"])
                     for t in saver.list({"configurable": {"thread_id": thread_id}}))
    return dict(counts)


def levels_from_history(saver, thread_id):
    """get_state_history as in the cell 'History per namespace': the root namespace only."""
    from helpers.namespaces import build_trip_planner

    graph = build_trip_planner(saver)
    return {(): len(list(graph.get_state_history({"configurable": {"thread_id": thread_id}})))}


def levels_every_thread(saver, thread_id):
    """saver.list(None), as namespace_rows reads it in the first run's cell: every thread."""
    return dict(Counter(_path(t.config["configurable"]["checkpoint_ns"]) for t in saver.list(None)))


def levels_raw_namespaces(saver, thread_id):
    return dict(Counter(t.config["configurable"]["checkpoint_ns"]
                        for t in saver.list({"configurable": {"thread_id": thread_id}})))


def levels_string_paths(saver, thread_id):
    return {"/".join(k) or "root": v for k, v in levels_right(saver, thread_id).items()}


def levels_from_the_reading_cell(saver, thread_id):
    """The cell 'Reading a namespace', pasted: only the deepest namespace of the thread, split into levels."""
    deepest = max((t.config["configurable"]["checkpoint_ns"] for t in saver.list(
        {"configurable": {"thread_id": thread_id}})), key=len)
    return {tuple(segment.partition(":")[0] for segment in deepest.split("|")): 1}


def path_from_the_reading_cell(ns):
    """The loop of the cell 'Reading a namespace', wrapped in a function."""
    return [segment.partition(":")[0] for segment in ns.split("|")]


WRONG_ANSWERS = {
    "05.1": [
        ((path_split_colon,), "return []"),
        ((path_root_blank,), "return []"),
        ((path_keeps_ids,), "split levels on NS_SEP"),
        ((path_last_only,), "outermost first"),
        ((path_as_string,), "expected a list"),
    ],
    "05.2": [
        (({None: 3, True: 3, False: 1},), "checkpointer=None"),
        (({None: 7, True: 7, False: 1},), "checkpointer=True"),
        (({None: 7, True: 3, False: 3},), "checkpointer=False"),
        (({None: 7, True: 3},), "missing False"),
        (([7, 3, 1],), "expected a dict"),
        (({None: "7", True: 3, False: 1},), "expected an int"),
    ],
    "05.3": [
        ((levels_from_history,), "get_state_history lists one namespace"),
        ((levels_every_thread,), "other threads' checkpoints"),
        ((levels_raw_namespaces,), "raw namespaces"),
        ((levels_string_paths,), "use tuples of node names"),
        ((levels_from_the_reading_cell,), "count every checkpoint of every namespace"),
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
    "05.1": [((path_from_the_reading_cell,), "the loop of the cell 'Reading a namespace', wrapped in a function")],
    "05.2": [(({None: 5, True: 3, False: 1},), "the two-run tables of 'Predict, then run: checkpointer=None, "
                                                 "True, False' (1 + 2 + 2 namespaces under None)")],
    "05.3": [((levels_from_history,), "get_state_history(thread) from the cell 'History per namespace'"),
             ((levels_every_thread,), "saver.list(None), as namespace_rows reads it in the first run's cell"),
             ((levels_from_the_reading_cell,), "the cell 'Reading a namespace' (the deepest namespace only)")],
    "05.4": [(({None: (1, 1), True: (1, 1), False: (2, 1)},), "the counts of 'What a resume runs again' (one run)"),
             (({None: (2, 1), True: (2, 2), False: (2, 1)},), "the plans of the two-run prediction (no failure)")],
}


def test_level_and_plan_solutions_pass():
    assert evaluate("05.3", levels_right).status == PASSED
    assert evaluate("05.4", {None: (2, 1), True: (2, 2), False: (3, 1)}).status == PASSED
    assert evaluate("05.4", {"None": [2, 1], "True": (2, 2), "False": (3, 1)}).status == PASSED


def test_string_keys_are_accepted_for_05_2():
    assert evaluate("05.2", {"None": 7, "True": 3, "False": 1}).status == PASSED
