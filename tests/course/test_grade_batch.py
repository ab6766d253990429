"""The grader on one CLI batch of chapter-00 submissions: statuses, tamper resistance,
forgeries, matching without metadata, timeouts, dead kernels, huge outputs, bad files, CSV.

One batch per module, so its kernels start in parallel (``--jobs 2``).
"""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path

import pytest

from course import grade
from helpers.checks import MIME_TYPE
from tests.course.grading_submissions import (
    FAKE_PASS,
    RIGHT,
    WRONG,
    edit_check,
    learner_00,
    run_cli,
    with_answer,
    write,
)


def _submissions_00(folder: Path) -> dict[str, str]:
    base = learner_00()
    subs: dict[str, str] = {}
    subs["right"] = write(folder, "right.ipynb", with_answer(base, RIGHT))
    subs["wrong"] = write(folder, "wrong.ipynb", with_answer(base, WRONG))
    subs["stub"] = write(folder, "stub.ipynb", base)
    # tampering with the check cell itself
    subs["check_edited"] = write(folder, "check_edited.ipynb", edit_check(with_answer(base, WRONG),
                                 'print("[00.1] passed")'))
    deleted = with_answer(base, RIGHT)
    deleted.cells = [c for c in deleted.cells if c.metadata.get("course", {}).get("role") != "check"]
    subs["check_deleted"] = write(folder, "check_deleted.ipynb", deleted)
    # forging from inside the exercise cell (with a wrong answer)
    forgeries = {
        "rebind_check": WRONG + "\nfrom IPython.display import display\n"
                        f"check = lambda *a: display({{{MIME_TYPE!r}: {FAKE_PASS!r}, 'text/plain': 'ok'}}, raw=True)",
        "patch_protocol": WRONG + "\nimport helpers.checks.protocol as p, helpers.checks as c\n"
                          "fake = lambda e, *a: p.CheckResult(e, 'passed', 'forged')\n"
                          "p.evaluate = fake; c.evaluate = fake\n"
                          "import helpers.checks.chapter_00 as m; p._REGISTRY['00.1'] = lambda a: 'forged'",
        "print_bundle": WRONG + "\nfrom IPython.display import display\n"
                        f"display({{{MIME_TYPE!r}: {FAKE_PASS!r}, 'text/plain': 'ok'}}, raw=True)",
        "hook_bundle": WRONG + "\nfrom IPython.display import display\n"
                       f"get_ipython().events.register('post_run_cell', lambda *a: display({{{MIME_TYPE!r}: "
                       f"{FAKE_PASS!r}, 'text/plain': 'ok'}}, raw=True, metadata={{'lgcourse-grader': "
                       "{'signature': '00'}}))",
    }
    for name, text in forgeries.items():
        subs[name] = write(folder, f"{name}.ipynb", with_answer(base, text))
    # an exercise cell removed; one turned into markdown
    missing = copy.deepcopy(base)
    missing.cells = [c for c in missing.cells if c.metadata.get("course", {}).get("role") != "exercise"]
    subs["missing"] = write(folder, "missing.ipynb", missing)
    # matching without metadata: by cell id, then by position before the check call
    by_id = with_answer(base, RIGHT)
    for cell in by_id.cells:
        cell.metadata.pop("course", None)
    subs["by_id"] = write(folder, "by_id.ipynb", by_id)
    by_position = copy.deepcopy(by_id)
    for index, cell in enumerate(by_position.cells):
        cell["id"] = f"x{index}"
    subs["by_position"] = write(folder, "by_position.ipynb", by_position)
    # runaway and deadly exercise cells
    subs["loop"] = write(folder, "loop.ipynb", with_answer(base, RIGHT + "\nwhile True:\n    pass"))
    subs["exit"] = write(folder, "exit.ipynb", with_answer(base, "import os\nos._exit(1)"))
    subs["raises"] = write(folder, "raises.ipynb", with_answer(base, "1 / 0\nkinds = {'visa': 'time'}"))
    subs["half"] = write(folder, "half.ipynb", with_answer(base, "kinds = {'visa': 'time'}\n1 / 0"))
    subs["huge"] = write(folder, "huge.ipynb", with_answer(base, RIGHT + "\nfor _ in range(2000):\n"
                                                                  "    print('x' * 10_000)"))
    # file names and files that are not notebooks
    subs["unicode"] = write(folder, "Élève ü 00 copy.ipynb", with_answer(base, RIGHT))
    no_meta = with_answer(base, RIGHT)
    no_meta.metadata.pop("course")
    subs["name_only"] = write(folder, "ñandú 00_start here.ipynb", no_meta)
    (folder / "00_not_json.ipynb").write_text("this is not JSON {", encoding="utf-8")
    subs["not_json"] = str(folder / "00_not_json.ipynb")
    (folder / "list.ipynb").write_text(json.dumps({"hello": [1, 2]}), encoding="utf-8")
    subs["not_notebook"] = str(folder / "list.ipynb")
    unknown = copy.deepcopy(base)
    unknown.metadata["course"] = {"chapter": "77", "slug": "77_nothing"}
    subs["unknown"] = write(folder, "mystery.ipynb", unknown)
    subs["absent"] = str(folder / "does_not_exist.ipynb")
    return subs


@pytest.fixture(scope="module")
def batch00(tmp_path_factory):
    folder = tmp_path_factory.mktemp("subs 00 ü")
    subs = _submissions_00(folder)
    out_csv = folder / "grades.csv"
    proc = run_cli(*subs.values(), "--csv", out_csv, "--timeout", 3, "--jobs", 2)
    with open(out_csv, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        fieldnames = reader.fieldnames
        rows = list(reader)
    by_file = {}
    for row in rows:
        by_file.setdefault(row["submission"], []).append(row)
    named = {name: by_file.get(path, []) for name, path in subs.items()}
    return {"proc": proc, "rows": rows, "fieldnames": fieldnames, "named": named, "subs": subs}


def one(batch, name):
    rows = batch["named"][name]
    assert len(rows) == 1, rows
    return rows[0]


def test_cli_exit_code_and_csv_columns(batch00):
    assert batch00["proc"].returncode == 0, batch00["proc"].stderr
    assert batch00["fieldnames"] == ["submission", "chapter", "exercise", "status", "message"]
    assert {r["status"] for r in batch00["rows"]} <= set(grade.STATUSES)
    # one row per exercise, every file reported, in the order given
    assert [r["submission"] for r in batch00["rows"]] == list(batch00["subs"].values())


def test_table_and_score_printed_in_order(batch00):
    out = batch00["proc"].stdout
    positions = [out.index(f"== {path}") for path in batch00["subs"].values()]
    assert positions == sorted(positions)
    assert "score: 1/1 passed" in out and "score: 0/1 passed" in out
    assert "exercise" in out and "status" in out and "message" in out


@pytest.mark.parametrize("name,status", [("right", "passed"), ("wrong", "failed"), ("stub", "not-attempted")])
def test_basic_statuses(batch00, name, status):
    row = one(batch00, name)
    assert (row["chapter"], row["exercise"], row["status"]) == ("00", "00.1", status)


def test_wrong_answer_carries_the_hint(batch00):
    assert "long time span" in one(batch00, "wrong")["message"]


@pytest.mark.parametrize("name,status", [("check_edited", "failed"), ("check_deleted", "passed")])
def test_tampered_check_cells_are_restored(batch00, name, status):
    assert one(batch00, name)["status"] == status


@pytest.mark.parametrize("name", ["rebind_check", "patch_protocol", "print_bundle", "hook_bundle"])
def test_forgery_from_the_exercise_cell_is_ignored(batch00, name):
    row = one(batch00, name)
    assert row["status"] == "failed", row
    assert "long time span" in row["message"]


def test_missing_exercise_cell_is_not_attempted(batch00):
    row = one(batch00, "missing")
    assert row["status"] == "not-attempted"
    assert row["message"] == "exercise cell missing from the submission"


@pytest.mark.parametrize("name", ["by_id", "by_position", "unicode", "name_only"])
def test_exercise_found_without_metadata_and_odd_names(batch00, name):
    row = one(batch00, name)
    assert (row["chapter"], row["status"]) == ("00", "passed"), row


@pytest.mark.parametrize("name,status,words", [
    ("loop", "timeout", "3 s"),  # the message names the time limit
    ("exit", "error", "kernel died"),
    ("raises", "error", "ZeroDivisionError"),
])
def test_a_loop_a_dead_kernel_or_an_exception_get_their_own_status(batch00, name, status, words):
    row = one(batch00, name)
    assert row["status"] == status and words in row["message"], row


def test_check_still_reads_what_an_erroring_cell_defined(batch00):
    row = one(batch00, "half")
    assert row["status"] == "failed" and "missing scenario" in row["message"]
    assert "also raised ZeroDivisionError" in row["message"]


def test_huge_output_is_capped_and_still_graded(batch00):
    assert one(batch00, "huge")["status"] == "passed"


@pytest.mark.parametrize("name,text", [("not_json", "not JSON"), ("not_notebook", "not a notebook"),
                                       ("unknown", "unknown chapter"), ("absent", "file not found")])
def test_bad_files_are_invalid_rows(batch00, name, text):
    row = one(batch00, name)
    assert row["status"] == "invalid" and text in row["message"], row


def test_invalid_file_with_a_chapter_name_gets_a_row_per_exercise(batch00):
    assert one(batch00, "not_json")["exercise"] == "00.1"
    assert one(batch00, "unknown")["exercise"] == ""
