"""Wrong answers for chapter 02's exercises must fail with a hint (same shape as chapter 00)."""

import sqlite3

from helpers.checks import PASSED, evaluate


# -- 02.2: learner listings ----------------------------------------------------------------
def thread_of(checkpoint_config):
    return {"configurable": {"thread_id": checkpoint_config["configurable"]["thread_id"]}}


def listed_from_the_checkpoint(graph, checkpoint_config, limit):
    """Passes the checkpoint as config: an exact-match filter, so nothing comes before it."""
    steps = graph.get_state_history(checkpoint_config, before=checkpoint_config, limit=limit)
    return [s.metadata["step"] for s in steps]


def only_the_checkpoint(graph, checkpoint_config, limit):
    return [s.metadata["step"] for s in graph.get_state_history(checkpoint_config, limit=limit)]


def without_limit(graph, checkpoint_config, limit):
    return [s.metadata["step"] for s in graph.get_state_history(thread_of(checkpoint_config), before=checkpoint_config)]


def oldest_first(graph, checkpoint_config, limit):
    steps = graph.get_state_history(thread_of(checkpoint_config), before=checkpoint_config, limit=limit)
    return [s.metadata["step"] for s in steps][::-1]


def including_itself(graph, checkpoint_config, limit):
    steps = [s.metadata["step"] for s in graph.get_state_history(thread_of(checkpoint_config))]
    own = graph.get_state(checkpoint_config).metadata["step"]
    return [step for step in steps if step <= own][:limit]


def snapshots_not_steps(graph, checkpoint_config, limit):
    return list(graph.get_state_history(thread_of(checkpoint_config), before=checkpoint_config, limit=limit))


def right_steps_before(graph, checkpoint_config, limit):
    steps = graph.get_state_history(thread_of(checkpoint_config), before=checkpoint_config, limit=limit)
    return [s.metadata["step"] for s in steps]


# -- 02.3: learner SQL ---------------------------------------------------------------------
def count_per_thread_in(table):
    """The learner's query, rows per thread_id, on ``table``: checkpoints is right, the others are mistakes."""

    def count(db_path):
        con = sqlite3.connect(db_path)
        try:
            return dict(con.execute(f"SELECT thread_id, COUNT(*) FROM {table} GROUP BY thread_id"))
        finally:
            con.close()

    return count


count_docs_table = count_per_thread_in("checkpoint_writes")  # PostgresSaver's table, read in its docs
count_writes = count_per_thread_in("writes")


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
        return dict(con.execute("SELECT thread_id, COUNT(DISTINCT parent_checkpoint_id) FROM checkpoints "
                                "GROUP BY thread_id"))
    finally:
        con.close()


RIGHT_THIRD_TURN = {"checkpoints": 9, "newest_step": 7, "blobs": 18}

WRONG_ANSWERS = {
    "02.1": [
        (({**RIGHT_THIRD_TURN, "checkpoints": 6},), "1 of 3 is off, starting with 'checkpoints'"),
        (({**RIGHT_THIRD_TURN, "newest_step": 1},), "does not restart at -1"),
        (({**RIGHT_THIRD_TURN, "blobs": 9},), "how SqliteSaver stores"),
        (({**RIGHT_THIRD_TURN, "blobs": 27},), "reuses the blobs"),
        (({**RIGHT_THIRD_TURN, "checkpoints": 6, "blobs": 12},), "2 of 3 are off"),
        (({"checkpoints": 9, "blobs": 18},), "missing key"),
        (({**RIGHT_THIRD_TURN, "blobs": "18"},), "expected an int"),
        (([9, 7, 18],), "expected a dict"),
    ],
    "02.2": [
        ((listed_from_the_checkpoint,), "you returned []: a checkpoint_id in the config is an exact-match filter"),
        ((only_the_checkpoint,), "only the checkpoint itself"),
        ((without_limit,), "pass limit= too"),
        ((oldest_first,), "order is reversed"),
        ((including_itself,), "starts with the checkpoint itself"),
        ((snapshots_not_steps,), "return each snapshot's metadata['step']"),
        (("not a function",), "expected a function"),
    ],
    "02.3": [
        ((count_docs_table,), "each saver names its own tables"),
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
    assert evaluate("02.2", right_steps_before).status == PASSED
    assert evaluate("02.3", count_per_thread_in("checkpoints")).status == PASSED
