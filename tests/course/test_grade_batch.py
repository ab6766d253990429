"""The grader's command line on one batch of chapter-00 submissions: statuses, the hint of a
real check, odd file names, chapter identification by file name, bad files, the CSV, the
printed tables, the exit code.

One batch per module, so its kernels start in parallel (``--jobs 2``). What does not depend
on a real chapter (tampering, forgeries, matching without metadata, timeouts, dead kernels,
exceptions, huge outputs) is tested on the fixture chapter 98 in test_grade_logic.py, whose
kernels start in a fraction of chapter 00's CPU.
"""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path

import pytest

from course import grade
from tests.course.grading_submissions import (
    RIGHT,
    WRONG,
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


@pytest.mark.parametrize("name", ["unicode", "name_only"])
def test_odd_file_names_and_a_chapter_named_only_by_the_file_name(batch00, name):
    row = one(batch00, name)
    assert (row["chapter"], row["status"]) == ("00", "passed"), row


@pytest.mark.parametrize("name,text", [("not_json", "not JSON"), ("not_notebook", "not a notebook"),
                                       ("unknown", "unknown chapter"), ("absent", "file not found")])
def test_bad_files_are_invalid_rows(batch00, name, text):
    row = one(batch00, name)
    assert row["status"] == "invalid" and text in row["message"], row


def test_invalid_file_with_a_chapter_name_gets_a_row_per_exercise(batch00):
    assert one(batch00, "not_json")["exercise"] == "00.1"
    assert one(batch00, "unknown")["exercise"] == ""
