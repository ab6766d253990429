"""Wrong answers for chapter 02's exercises must fail with a hint (same shape as chapter 00)."""

import sqlite3


from helpers.checks import PASSED, evaluate


# -- 02.2: learner walks -------------------------------------------------------------------
def walk_all_listed(saver, config):
    """Lists every checkpoint of the thread instead of following parents."""
    return [t.metadata["step"] for t in saver.list(config)]


def walk_oldest_first(saver, config):
    steps, current = [], saver.get_tuple(config)
    while current is not None:
        steps.append(current.metadata["step"])
        current = saver.get_tuple(current.parent_config) if current.parent_config else None
    return steps[::-1]


def walk_forever(saver, config):
    steps, current = [], saver.get_tuple(config)
    while current is not None:  # never moves on to the parent
        steps.append(current.metadata["step"])
        current = saver.get_tuple(current.config)
    return steps


def walk_without_root(saver, config):
    steps, current = [], saver.get_tuple(config)
    while current is not None and current.parent_config:
        steps.append(current.metadata["step"])
        current = saver.get_tuple(current.parent_config)
    return steps


def walk_ids(saver, config):
    steps, current = [], saver.get_tuple(config)
    while current is not None:
        steps.append(current.config["configurable"]["checkpoint_id"])
        current = saver.get_tuple(current.parent_config) if current.parent_config else None
    return steps


def walk_crashes_on_empty(saver, config):
    current = saver.get_tuple(config)
    steps = [current.metadata["step"]]  # AttributeError on an empty thread
    while current.parent_config:
        current = saver.get_tuple(current.parent_config)
        steps.append(current.metadata["step"])
    return steps


# -- 02.3: learner SQL ---------------------------------------------------------------------
def count_docs_table(db_path):
    with sqlite3.connect(db_path) as con:
        return dict(con.execute("SELECT thread_id, COUNT(*) FROM checkpoint_writes GROUP BY thread_id"))


def count_writes(db_path):
    con = sqlite3.connect(db_path)
    try:
        return dict(con.execute("SELECT thread_id, COUNT(*) FROM writes GROUP BY thread_id"))
    finally:
        con.close()


def count_as_rows(db_path):
    con = sqlite3.connect(db_path)
    try:
        return con.execute("SELECT thread_id, COUNT(*) FROM checkpoints GROUP BY thread_id").fetchall()
    finally:
        con.close()


def count_first_thread_only(db_path):
    con = sqlite3.connect(db_path)
    try:
        return dict([con.execute("SELECT thread_id, COUNT(*) FROM checkpoints GROUP BY thread_id").fetchone()])
    finally:
        con.close()


def count_distinct_steps(db_path):
    con = sqlite3.connect(db_path)
    try:
        return dict(con.execute("SELECT thread_id, COUNT(DISTINCT parent_checkpoint_id) FROM checkpoints GROUP BY thread_id"))
    finally:
        con.close()


RIGHT_THIRD_TURN = {"checkpoints": 9, "newest_step": 7, "put": 3, "put_writes": 2}

WRONG_ANSWERS = {
    "02.1": [
        (({**RIGHT_THIRD_TURN, "checkpoints": 6},), "every turn adds an input checkpoint"),
        (({**RIGHT_THIRD_TURN, "newest_step": 1},), "does not restart at -1"),
        (({**RIGHT_THIRD_TURN, "put": 2},), "the input checkpoint included"),
        (({**RIGHT_THIRD_TURN, "put": 9},), "count only the third invoke"),
        (({**RIGHT_THIRD_TURN, "put_writes": 3},), "is not a task"),
        (({"checkpoints": 9, "put": 3},), "missing key"),
        (({**RIGHT_THIRD_TURN, "put": "3"},), "expected an int"),
        (([9, 7, 3, 2],), "expected a dict"),
    ],
    "02.2": [
        ((walk_all_listed,), "follow parent_config instead"),
        ((walk_oldest_first,), "order is reversed"),
        ((walk_forever,), "never stopped"),
        ((walk_without_root,), "root checkpoint (step -1) is missing"),
        ((walk_ids,), "return metadata['step']"),
        ((walk_crashes_on_empty,), "raised AttributeError"),
        (("not a function",), "expected a function"),
    ],
    "02.3": [
        ((count_docs_table,), "tables are named checkpoints and writes"),
        ((count_writes,), "row counts of the writes table"),
        ((count_as_rows,), "dict(rows)"),
        ((count_first_thread_only,), "missing"),
        ((count_distinct_steps,), "the count for"),
    ],
}


def test_right_answers_pass():
    from helpers.checks.chapter_02 import third_turn_truth

    assert third_turn_truth() == RIGHT_THIRD_TURN
    assert evaluate("02.1", dict(RIGHT_THIRD_TURN)).status == PASSED

    def walk(saver, config):
        steps, current = [], saver.get_tuple(config)
        while current is not None:
            steps.append(current.metadata["step"])
            current = saver.get_tuple(current.parent_config) if current.parent_config else None
        return steps

    def count(db_path):
        con = sqlite3.connect(db_path)
        try:
            return dict(con.execute("SELECT thread_id, COUNT(*) FROM checkpoints GROUP BY thread_id"))
        finally:
            con.close()

    assert evaluate("02.2", walk).status == PASSED
    assert evaluate("02.3", count).status == PASSED
