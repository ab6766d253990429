"""Wrong answers for chapter 11's exercises must fail with a hint; right ones must pass.

Same shape as tests/checks/test_checks_chapter_00.py.
"""

import pytest

from helpers.checks import FAILED, PASSED, evaluate
from helpers.ledger import delivery as ledger_delivery
from helpers.ledger import submit_command


# ----------------------------------------------------------------------------- 11.1 answers
def accept_right(conn, tenant_id, command_id, payload_fingerprint):
    cur = conn.execute(
        "INSERT INTO commands (tenant_id, command_id, fingerprint) VALUES (?, ?, ?) "
        "ON CONFLICT (tenant_id, command_id) DO NOTHING", (tenant_id, command_id, payload_fingerprint))
    created = cur.rowcount == 1
    (stored,) = conn.execute("SELECT fingerprint FROM commands WHERE tenant_id = ? AND command_id = ?",
                             (tenant_id, command_id)).fetchone()
    return stored, created


def accept_insert_or_ignore_with_cursor(conn, tenant_id, command_id, payload_fingerprint):
    cur = conn.cursor()
    cur.execute("INSERT OR IGNORE INTO commands VALUES (?, ?, ?)", (tenant_id, command_id, payload_fingerprint))
    created = cur.rowcount == 1
    cur.execute("SELECT fingerprint FROM commands WHERE tenant_id = ? AND command_id = ?", (tenant_id, command_id))
    return cur.fetchone()[0], created


def accept_try_insert(conn, tenant_id, command_id, payload_fingerprint):
    import sqlite3

    try:
        conn.execute("INSERT INTO commands VALUES (?, ?, ?)", (tenant_id, command_id, payload_fingerprint))
        created = True
    except sqlite3.IntegrityError:
        created = False
    row = conn.execute("SELECT fingerprint FROM commands WHERE tenant_id = ? AND command_id = ?",
                       (tenant_id, command_id)).fetchone()
    return row[0], created


def check_then_insert(insert_statement):
    """The learner's accept that looks for the row first and inserts only when it found none.

    Two callers that look at the same moment both find nothing: with a plain INSERT the
    second one raises IntegrityError, with INSERT OR IGNORE both report created=True.
    """

    def accept(conn, tenant_id, command_id, payload_fingerprint):
        row = conn.execute("SELECT fingerprint FROM commands WHERE tenant_id = ? AND command_id = ?",
                           (tenant_id, command_id)).fetchone()
        if row is not None:
            return row[0], False
        conn.execute(insert_statement, (tenant_id, command_id, payload_fingerprint))
        return payload_fingerprint, True

    return accept


accept_check_then_insert = check_then_insert("INSERT INTO commands VALUES (?, ?, ?)")
accept_check_then_insert_or_ignore = check_then_insert("INSERT OR IGNORE INTO commands VALUES (?, ?, ?)")


def accept_returns_given(conn, tenant_id, command_id, payload_fingerprint):
    cur = conn.execute("INSERT INTO commands VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                       (tenant_id, command_id, payload_fingerprint))
    return payload_fingerprint, cur.rowcount == 1


def accept_replace(conn, tenant_id, command_id, payload_fingerprint):
    cur = conn.execute("INSERT OR REPLACE INTO commands VALUES (?, ?, ?)", (tenant_id, command_id, payload_fingerprint))
    return payload_fingerprint, cur.rowcount == 1


def accept_formatted(conn, tenant_id, command_id, payload_fingerprint):
    cur = conn.execute(f"INSERT INTO commands VALUES ('{tenant_id}', '{command_id}', '{payload_fingerprint}') "
                       "ON CONFLICT DO NOTHING")
    created = cur.rowcount == 1
    row = conn.execute(f"SELECT fingerprint FROM commands WHERE tenant_id = '{tenant_id}' "
                       f"AND command_id = '{command_id}'").fetchone()
    return row[0], created


def accept_no_tenant(conn, tenant_id, command_id, payload_fingerprint):
    cur = conn.execute("INSERT INTO commands VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                       (tenant_id, command_id, payload_fingerprint))
    row = conn.execute("SELECT fingerprint FROM commands WHERE command_id = ?", (command_id,)).fetchone()
    return row[0], cur.rowcount == 1


def accept_created_only(conn, tenant_id, command_id, payload_fingerprint):
    cur = conn.execute("INSERT INTO commands VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                       (tenant_id, command_id, payload_fingerprint))
    return cur.rowcount == 1


def accept_raises(conn, tenant_id, command_id, payload_fingerprint):
    raise KeyError("oops")


def accept_stub(conn, tenant_id, command_id, payload_fingerprint):
    return ...


# ----------------------------------------------------------------------------- 11.2 answers
def store_right(conn, seq, attempt, result):
    cur = conn.execute("UPDATE jobs SET status = 'done', result = ? WHERE seq = ? AND attempt = ? "
                       "AND status = 'running'", (result, seq, attempt))
    return cur.rowcount == 1


def store_no_token(conn, seq, attempt, result):
    cur = conn.execute("UPDATE jobs SET status = 'done', result = ? WHERE seq = ? AND status = 'running'",
                       (result, seq))
    return cur.rowcount == 1


def store_no_status(conn, seq, attempt, result):
    cur = conn.execute("UPDATE jobs SET status = 'done', result = ? WHERE seq = ? AND attempt = ?",
                       (result, seq, attempt))
    return cur.rowcount == 1


def store_at_least(conn, seq, attempt, result):
    cur = conn.execute("UPDATE jobs SET status = 'done', result = ? WHERE seq = ? AND attempt <= ? "
                       "AND status = 'running'", (result, seq, attempt))
    return cur.rowcount == 1


def store_formatted(conn, seq, attempt, result):
    cur = conn.execute(f"UPDATE jobs SET status = 'done', result = '{result}' WHERE seq = {seq} "
                       f"AND attempt = {attempt} AND status = 'running'")
    return cur.rowcount == 1


def store_returns_rowcount(conn, seq, attempt, result):
    return conn.execute("UPDATE jobs SET status = 'done', result = ? WHERE seq = ? AND attempt = ? "
                        "AND status = 'running'", (result, seq, attempt)).rowcount


def store_read_then_write(conn, seq, attempt, result):
    """Reads the token and decides in Python: right answers, but only if nothing runs in between."""
    row = conn.execute("SELECT attempt, status FROM jobs WHERE seq = ?", (seq,)).fetchone()
    if row != (attempt, "running"):
        return False
    conn.execute("UPDATE jobs SET status = 'done', result = ? WHERE seq = ?", (result, seq))
    return True


# ----------------------------------------------------------------------------- 11.3 answers
def next_right(conn):
    row = conn.execute("SELECT MIN(seq) FROM jobs AS j WHERE status = 'queued' AND NOT EXISTS "
                       "(SELECT 1 FROM jobs WHERE thread_id = j.thread_id AND status = 'running')").fetchone()
    return row[0]


def next_by_head(conn):
    """The ledger's way: each thread's head is its oldest unfinished job; claim the oldest queued head."""
    row = conn.execute("SELECT seq FROM jobs WHERE status = 'queued' AND seq IN (SELECT MIN(seq) FROM jobs "
                       "WHERE status IN ('queued', 'running') GROUP BY thread_id) ORDER BY seq LIMIT 1").fetchone()
    return None if row is None else row[0]


def next_oldest_queued(conn):
    row = conn.execute("SELECT MIN(seq) FROM jobs WHERE status = 'queued'").fetchone()
    return row[0]


def next_no_older_queued(conn):
    row = conn.execute("SELECT MIN(seq) FROM jobs AS j WHERE status = 'queued' AND NOT EXISTS "
                       "(SELECT 1 FROM jobs WHERE thread_id = j.thread_id AND status = 'queued' AND seq < j.seq)"
                       ).fetchone()
    return row[0]


def next_blocked_by_dead(conn):
    row = conn.execute("SELECT MIN(seq) FROM jobs AS j WHERE status = 'queued' AND NOT EXISTS "
                       "(SELECT 1 FROM jobs WHERE thread_id = j.thread_id AND status IN ('running', 'dead'))"
                       ).fetchone()
    return row[0]


def next_newest(conn):
    row = conn.execute("SELECT MAX(seq) FROM jobs AS j WHERE status = 'queued' AND NOT EXISTS "
                       "(SELECT 1 FROM jobs WHERE thread_id = j.thread_id AND status = 'running')").fetchone()
    return row[0]


def next_head_by_thread_name(descending):
    """Each thread's oldest queued job, if the thread runs nothing, but the heads ordered by thread name."""

    def next_job(conn):
        row = conn.execute("SELECT seq FROM jobs AS j WHERE status = 'queued' AND NOT EXISTS (SELECT 1 FROM jobs "
                           "WHERE thread_id = j.thread_id AND status = 'running') AND seq = (SELECT MIN(seq) FROM jobs "
                           "WHERE thread_id = j.thread_id AND status = 'queued') ORDER BY thread_id"
                           + (" DESC" if descending else "") + " LIMIT 1").fetchone()
        return None if row is None else row[0]

    return next_job


def next_as_tuple(conn):
    return conn.execute("SELECT MIN(seq) FROM jobs WHERE status = 'queued'").fetchone()


# ----------------------------------------------------------------------------- 11.4 answers
def expire_right(conn, now, max_attempts):
    dead = [seq for (seq,) in conn.execute("SELECT seq FROM jobs WHERE status = 'running' AND lease_expires <= ? "
                                           "AND attempt >= ? ORDER BY seq", (now, max_attempts))]
    conn.execute("UPDATE jobs SET status = 'dead' WHERE status = 'running' AND lease_expires <= ? AND attempt >= ?",
                 (now, max_attempts))
    conn.execute("UPDATE jobs SET status = 'queued' WHERE status = 'running' AND lease_expires <= ?", (now,))
    return dead


def expire_strictly_before(conn, now, max_attempts):
    return expire_right(conn, now - 1e-9, max_attempts)


def expire_all_back_to_queue(conn, now, max_attempts):
    conn.execute("UPDATE jobs SET status = 'queued' WHERE status = 'running' AND lease_expires <= ?", (now,))
    return []


def expire_off_by_one(conn, now, max_attempts):
    return expire_right(conn, now, max_attempts + 1)


def expire_any_status(conn, now, max_attempts):
    dead = [seq for (seq,) in conn.execute("SELECT seq FROM jobs WHERE lease_expires <= ? AND attempt >= ?",
                                           (now, max_attempts))]
    conn.execute("UPDATE jobs SET status = 'dead' WHERE lease_expires <= ? AND attempt >= ?", (now, max_attempts))
    conn.execute("UPDATE jobs SET status = 'queued' WHERE status = 'running' AND lease_expires <= ?", (now,))
    return dead


def expire_resets_attempt(conn, now, max_attempts):
    dead = expire_right(conn, now, max_attempts)
    conn.execute("UPDATE jobs SET attempt = 0 WHERE status = 'queued'")
    return dead


def expire_returns_expired(conn, now, max_attempts):
    expired = [seq for (seq,) in conn.execute("SELECT seq FROM jobs WHERE status = 'running' AND lease_expires <= ?",
                                              (now,))]
    expire_right(conn, now, max_attempts)
    return expired


# ----------------------------------------------------------------------------- copy attacks
def _pasted(name):
    """A cell of the chapter pasted into the exercise cell, as it stands."""
    return getattr(ledger_delivery, name)


WRONG_ANSWERS = {
    "11.1": [
        ((accept_check_then_insert,), "checks first and inserts later"),
        ((accept_check_then_insert_or_ignore,), "concurrent callers got created=True"),
        ((accept_returns_given,), "return the fingerprint read from the table"),
        ((accept_replace,), "INSERT OR REPLACE"),
        ((accept_formatted,), "? parameter"),
        ((accept_no_tenant,), "filter the SELECT on both"),
        ((accept_created_only,), "return a pair"),
        ((accept_raises,), "raised KeyError"),
        (("INSERT ... ON CONFLICT DO NOTHING",), "expected a function"),
    ],
    "11.2": [
        ((store_no_token,), "a stale worker's write must change nothing"),
        ((store_no_status,), "AND status = 'running'"),
        ((store_at_least,), "compare with ="),
        ((store_formatted,), "? parameter"),
        ((store_returns_rowcount,), "return a bool"),
        ((lambda conn, seq, attempt, result: True,), "a stale worker"),
    ],
    "11.3": [
        ((next_oldest_queued,), "an older job of its thread is still"),
        ((next_no_older_queued,), "an older job of its thread is still"),
        ((next_blocked_by_dead,), "may run now"),
        ((next_newest,), "oldest unfinished job goes first"),
        ((next_head_by_thread_name(False),), "take the oldest head"),
        ((next_head_by_thread_name(True),), "take the oldest head"),
        ((next_as_tuple,), "return a job's seq"),
        ((lambda conn: None,), "may run now"),
    ],
    "11.4": [
        ((expire_strictly_before,), "lease_expires <= now"),
        ((expire_all_back_to_queue,), "dead now"),
        ((expire_off_by_one,), "dead now"),
        ((expire_any_status,), "must not change"),
        ((expire_resets_attempt,), "keep every attempt"),
        ((expire_returns_expired,), "not every expired job"),
        ((lambda conn, now, max_attempts: None,), "no lease has ended"),
    ],
}

# The answer a learner gets by pasting the nearest visible cell into the exercise cell.
COPY_ATTACKS = {
    "11.1": [((submit_command,), "cell 'submit_command' of section 'Acceptance: insert first'")],
    "11.2": [((_pasted("finish_command"),), "cell 'finish_command' of section 'Recording a result'"),
             ((_pasted("renew_lease"),), "cell 'renew_lease' of section 'Renewal, and a stale worker'")],
    "11.3": [((_pasted("next_head"),), "cell 'next_head' of section 'Claim: a lease and a fencing token'")],
    "11.4": [((_pasted("claim_next"),), "cell 'claim_next' of section 'Dead letters'"),
             ((_pasted("release_lease"),), "cell 'release_lease' of section 'Dead letters'")],
}


@pytest.mark.parametrize("answer", [accept_right, accept_insert_or_ignore_with_cursor, accept_try_insert])
def test_insert_first_implementations_pass(answer):
    result = evaluate("11.1", answer)
    assert result.status == PASSED, result


def test_check_then_insert_is_caught_every_time():
    # The gate makes the losing interleaving certain, not likely: repeat to be sure.
    for _ in range(5):
        result = evaluate("11.1", accept_check_then_insert_or_ignore)
        assert result.status == FAILED and "created=True" in result.message, result


def test_a_plain_sql_typo_is_not_blamed_on_formatting():
    def typo(conn, tenant_id, command_id, payload_fingerprint):
        conn.execute("INSERT INTO commands VALUES (?, ?, ?) ON CONFLICT DO NOTHIN",
                     (tenant_id, command_id, payload_fingerprint))
        return payload_fingerprint, True

    result = evaluate("11.1", typo)
    assert result.status == FAILED and "OperationalError" in result.message and "? parameter" not in result.message


@pytest.mark.parametrize("exercise_id, answer", [("11.2", store_right), ("11.2", store_read_then_write),
                                                 ("11.3", next_right), ("11.3", next_by_head),
                                                 ("11.4", expire_right)])
def test_right_answers_pass(exercise_id, answer):
    result = evaluate(exercise_id, answer)
    assert result.status == PASSED, result


@pytest.mark.parametrize("exercise_id, answer, what", [(e, a[0], w) for e, attacks in COPY_ATTACKS.items()
                                                        for a, w in attacks])
def test_pasting_the_nearest_cell_does_not_pass(exercise_id, answer, what):
    result = evaluate(exercise_id, answer)
    assert result.status != PASSED, (what, result)
