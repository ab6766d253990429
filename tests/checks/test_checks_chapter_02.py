"""Wrong answers for chapter 02's exercises must fail with a hint, and pasted cells must not pass (see chapter 00)."""

import json

from helpers import checkpoint_anatomy
from helpers.checks import PASSED, evaluate


# -- 02.2: learner pagers ------------------------------------------------------------------
def thread_of(thread_id):
    return {"configurable": {"thread_id": thread_id}}


def steps(snapshots):
    return [s.metadata["step"] for s in snapshots]


def right_history_pages(graph, thread_id, size):
    pages, page = [], list(graph.get_state_history(thread_of(thread_id), limit=size))
    while page:
        pages.append(steps(page))
        page = list(graph.get_state_history(thread_of(thread_id), before=page[-1].config, limit=size))
    return pages


def pages_stopping_on_a_short_page(graph, thread_id, size):
    """Also right: it saves the last, empty call."""
    pages, before = [], None
    while True:
        page = list(graph.get_state_history(thread_of(thread_id), before=before, limit=size))
        if page:
            pages.append(steps(page))
        if len(page) < size:
            return pages
        before = page[-1].config


def pages_before_the_first(graph, thread_id, size):
    """before= the newest snapshot of the page: the pages overlap."""
    pages, page = [], list(graph.get_state_history(thread_of(thread_id), limit=size))
    while page and len(pages) < 20:
        pages.append(steps(page))
        page = list(graph.get_state_history(thread_of(thread_id), before=page[0].config, limit=size))
    return pages


def pages_from_the_checkpoint(graph, thread_id, size):
    """The next page asked for with the oldest snapshot's config as config: an exact match, forever."""
    pages, page = [], list(graph.get_state_history(thread_of(thread_id), limit=size))
    while page:
        pages.append(steps(page))
        page = list(graph.get_state_history(page[-1].config, limit=size))
    return pages


def pages_sliced_from_everything(graph, thread_id, size):
    """Loads the whole history in one call and slices it."""
    every = steps(graph.get_state_history(thread_of(thread_id)))
    return [every[i:i + size] for i in range(0, len(every), size)]


def pages_without_limit(graph, thread_id, size):
    page = steps(graph.get_state_history(thread_of(thread_id)))
    return [page] if page else []


def pages_flat(graph, thread_id, size):
    return [step for page in right_history_pages(graph, thread_id, size) for step in page]


def pages_oldest_first(graph, thread_id, size):
    return [page[::-1] for page in right_history_pages(graph, thread_id, size)][::-1]


def pages_one_only(graph, thread_id, size):
    page = steps(graph.get_state_history(thread_of(thread_id), limit=size))
    return [page] if page else []


def pages_of_snapshots(graph, thread_id, size):
    return [list(graph.get_state_history(thread_of(thread_id), limit=size))]


# -- 02.3: learner SQL ---------------------------------------------------------------------
def count_per_thread_in(table):
    """The learner's query, rows per thread_id, on ``table``: checkpoints is right, the others are mistakes."""

    def count(connection):
        return dict(connection.execute(f"SELECT thread_id, COUNT(*) FROM {table} GROUP BY thread_id"))

    return count


count_docs_table = count_per_thread_in("checkpoint_writes")  # PostgresSaver's table, read in its docs
count_writes = count_per_thread_in("writes")


count_checkpoints = count_per_thread_in("checkpoints")

ROOT_ONLY = " WHERE checkpoint_ns = ''"


def metadata_rows(connection, where=ROOT_ONLY):
    return connection.execute(f"SELECT thread_id, metadata FROM checkpoints{where}").fetchall()


def turns_with_source(source, where=ROOT_ONLY):
    """Checkpoints per thread whose metadata source is ``source``: "input" in the root namespace is right."""

    def count(connection):
        turns = {}
        for thread_id, metadata in metadata_rows(connection, where):
            turns[thread_id] = turns.get(thread_id, 0) + (json.loads(metadata)["source"] == source)
        return turns

    return count


def turns_as_rows(connection):
    return sorted(turns_with_source("input")(connection).items())


def turns_first_thread_only(connection):
    thread, turns = next(iter(turns_with_source("input")(connection).items()))
    return {thread: turns}


def turns_by_dividing(connection):
    """A row count divided by the chapter graph's 3 checkpoints per turn."""
    return {thread: rows // 3 for thread, rows in count_checkpoints(connection).items()}


def turns_closing_the_connection(connection):
    """Right counts, but it closes the dashboard's connection."""
    turns = turns_with_source("input")(connection)
    connection.close()
    return turns


RIGHT_TWO_TURNS = {"checkpoints": 10, "newest_step": 8, "reply_pending": 2}

WRONG_ANSWERS = {
    "02.1": [
        (({**RIGHT_TWO_TURNS, "checkpoints": 6},), "6 is the one-node graph's count"),
        (({**RIGHT_TWO_TURNS, "checkpoints": 8},), "8 is a two-node graph's count"),
        (({**RIGHT_TWO_TURNS, "checkpoints": 5},), "5 counts one turn only"),
        (({**RIGHT_TWO_TURNS, "checkpoints": 12},), "1 of 3 is off, starting with 'checkpoints'"),
        (({**RIGHT_TWO_TURNS, "newest_step": 3},), "does not restart at -1"),
        (({**RIGHT_TWO_TURNS, "newest_step": 4},), "one-node graph's newest step"),
        (({**RIGHT_TWO_TURNS, "newest_step": 6},), "two-node graph's newest step"),
        (({**RIGHT_TWO_TURNS, "reply_pending": 0},), "has ('reply',) in next"),
        (({**RIGHT_TWO_TURNS, "checkpoints": 6, "newest_step": 4},), "2 of 3 are off"),
        (({"checkpoints": 10, "newest_step": 8},), "missing key"),
        (({**RIGHT_TWO_TURNS, "reply_pending": "2"},), "expected an int"),
        (([10, 8, 2],), "expected a dict"),
    ],
    "02.2": [
        ((pages_before_the_first,), "the pages overlap"),
        ((pages_from_the_checkpoint,), "exact-match filter, so before= is how you move on"),
        ((pages_sliced_from_everything,), "a get_state_history call had limit=None"),
        ((pages_without_limit,), "pass limit=size"),
        ((pages_flat,), "one flat list of steps"),
        ((pages_oldest_first,), "order is reversed"),
        ((pages_one_only,), "keep fetching"),
        ((pages_of_snapshots,), "return each snapshot's metadata['step']"),
        (("not a function",), "expected a function"),
    ],
    "02.3": [
        ((count_docs_table,), "each saver names its own tables"),
        ((count_checkpoints,), "row counts of the checkpoints table"),
        ((count_writes,), "row counts of the writes table"),
        ((turns_by_dividing,), "divided by 3 fits only the one-node chat graph"),
        ((turns_as_rows,), "dict(rows)"),
        ((turns_first_thread_only,), "missing"),
        ((turns_with_source("loop"),), "the count for"),
        ((turns_with_source("input", where=""),), "you counted every namespace"),
        ((turns_closing_the_connection,), "closed the connection"),
    ],
}


# -- copy attacks: the nearest visible cell, pasted ---------------------------------------
def pasted_listing_cell(graph, thread_id, size):
    """Cell 'labelled' of section 'Addressing one checkpoint' pasted: one listing of the thread, before= one point."""
    thread = {"configurable": {"thread_id": thread_id}}
    newest = next(iter(graph.get_state_history(thread)), None)
    if newest is None:
        return []
    return [[newest.metadata["step"], *steps(graph.get_state_history(thread, before=newest.config, limit=size))]]


def pasted_history_of_the_thread(graph, thread_id, size):
    """The second line of that cell, history(thread), as one page."""
    page = steps(graph.get_state_history({"configurable": {"thread_id": thread_id}}))
    return [page] if page else []


def pasted_rows_per_thread(db_path):
    """The delete_thread cell's table helper, pasted: rows of both tables."""
    return checkpoint_anatomy.rows_per_thread(db_path)


def pasted_rows_per_thread_as_dict(db_path):
    """The same table read into a dict: the writes rows overwrite the checkpoints rows."""
    return {row["thread_id"]: row["rows"] for row in checkpoint_anatomy.rows_per_thread(db_path)}


def pasted_checkpoint_rows_as_dict(db_path):
    """The table's checkpoints rows only: rows per thread, not turns."""
    return {row["thread_id"]: row["rows"] for row in checkpoint_anatomy.rows_per_thread(db_path)
            if row["table"] == "checkpoints"}


def pasted_saved_helpers(p):
    """The re-audit's paste: the saved helpers stored_checkpoints and rows_per_thread, which open a path."""
    return {t: sum(json.loads(r["metadata (JSON)"])["source"] == "input"
                   for r in checkpoint_anatomy.stored_checkpoints(p, t))
            for t in {r["thread_id"] for r in checkpoint_anatomy.rows_per_thread(p)}}


COPY_ATTACKS = {
    "02.1": [(({"checkpoints": 6, "newest_step": 4, "reply_pending": 2},),
              "the one-node graph's two turns, read off the prediction cell's history (print_history)"),
             (({"checkpoints": 8, "newest_step": 6, "reply_pending": 2},),
              "cell 'check_in' of section 'Checkpoint, checkpointer, and the loop that runs the graph' (the watched "
              "graph START -> check_in -> reply -> END), pasted and run for a second turn"),
             (({"checkpoints": 6, "newest_step": 5, "reply_pending": 2},),
              "the same history with one more step for check_in, but no more checkpoints")],
    "02.2": [((pasted_listing_cell,), "cell 'labelled' of section 'Addressing one checkpoint', pasted"),
             ((pasted_history_of_the_thread,), "the history(thread) line of that cell, as one page")],
    "02.3": [((pasted_rows_per_thread,), "the table of the delete_thread cell (checkpoint_anatomy.rows_per_thread)"),
             ((pasted_rows_per_thread_as_dict,), "that table read into a dict without looking at its table column"),
             ((pasted_checkpoint_rows_as_dict,), "that table's checkpoints rows read into a dict"),
             ((count_checkpoints,), "the chapter's sqlite3 query of the checkpoints table, grouped by thread"),
             ((pasted_saved_helpers,), "checkpoint_anatomy.stored_checkpoints (cell 24) summed per thread of "
                                       "checkpoint_anatomy.rows_per_thread (cell 35), the re-audit's paste")],
}


def test_right_answers_pass():
    from helpers.checks.chapter_02 import two_turns_truth

    assert two_turns_truth() == RIGHT_TWO_TURNS
    assert evaluate("02.1", dict(RIGHT_TWO_TURNS)).status == PASSED
    assert evaluate("02.2", right_history_pages).status == PASSED
    assert evaluate("02.2", pages_stopping_on_a_short_page).status == PASSED
    assert evaluate("02.3", turns_with_source("input")).status == PASSED
