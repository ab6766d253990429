"""Wrong answers for chapter 11's exercises must fail with a hint; right ones must pass.

Same shape as tests/checks/test_checks_chapter_00.py.
"""

import pytest

from helpers.checks import FAILED, PASSED, evaluate


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

