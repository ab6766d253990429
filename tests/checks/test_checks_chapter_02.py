"""Wrong answers for chapter 02's exercises must fail with a hint, and pasted cells must not pass (see chapter 00)."""

import sqlite3

import pytest

from helpers import checkpoint_anatomy
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


# -- copy attacks: the nearest visible cell, pasted ---------------------------------------
def pasted_listing_cell(graph, checkpoint_config, limit):
    """Cell 'labelled' of section 'Addressing one checkpoint' pasted: its thread is trip-1, and it prints labels."""
    thread = {"configurable": {"thread_id": "trip-1"}}
    return [s.metadata["step"] for s in graph.get_state_history(thread, before=checkpoint_config, limit=limit)]


def pasted_listing_from_the_checkpoint(graph, checkpoint_config, limit):
    """The first line of the same cell: history(C4's config), the exact-match listing."""
    return [s.metadata["step"] for s in graph.get_state_history(checkpoint_config)][:limit]


def pasted_rows_per_thread(db_path):
    """The delete_thread cell's table helper, pasted: rows of both tables."""
    return checkpoint_anatomy.rows_per_thread(db_path)


def pasted_rows_per_thread_as_dict(db_path):
    """The same table read into a dict: the writes rows overwrite the checkpoints rows."""
    return {row["thread_id"]: row["rows"] for row in checkpoint_anatomy.rows_per_thread(db_path)}


COPY_ATTACKS = {
    "02.1": [(({"checkpoints": 6, "newest_step": 4, "blobs": 12},),
              "the two-turn numbers of the visible cells (print_history, blob_rows) copied"),
             (({"checkpoints": 6, "newest_step": 5, "blobs": 12},),
              "the two-turn tables read off, with one more step")],
    "02.2": [((pasted_listing_cell,), "cell 'labelled' of section 'Addressing one checkpoint', pasted"),
             ((pasted_listing_from_the_checkpoint,), "the first listing of that cell, history(C4's config)")],
    "02.3": [((pasted_rows_per_thread,), "the table of the delete_thread cell (checkpoint_anatomy.rows_per_thread)"),
             ((pasted_rows_per_thread_as_dict,), "that table read into a dict without looking at its table column")],
}


@pytest.mark.parametrize("exercise_id,args,pasted",
                         [(e, a, p) for e, cases in COPY_ATTACKS.items() for a, p in cases])
def test_copy_attacks_do_not_pass(exercise_id, args, pasted):
    assert evaluate(exercise_id, *args).status != PASSED, pasted


def test_right_answers_pass():
    from helpers.checks.chapter_02 import third_turn_truth

    assert third_turn_truth() == RIGHT_THIRD_TURN
    assert evaluate("02.1", dict(RIGHT_THIRD_TURN)).status == PASSED
    assert evaluate("02.2", right_steps_before).status == PASSED
    assert evaluate("02.3", count_per_thread_in("checkpoints")).status == PASSED
