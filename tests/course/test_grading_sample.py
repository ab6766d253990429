"""INSTRUCTORS.md's sample grader run is real grader output, and still fits the chapters.

The sample is pasted from ``python -m course.grade submissions/ --csv grades.csv --timeout 10``
(see the text around it). When a chapter's exercises or its checks' messages change, this
test fails: grade such a folder again and paste the new output.
"""

import ast
import csv
import io
import re

import nbformat

from course.grade.results import CSV_COLUMNS
from course.layout import ROOT, SOLUTIONS, chapters

GUIDE = (ROOT / "INSTRUCTORS.md").read_text(encoding="utf-8")
AFTER_SAMPLE = re.split(r"A sample\s+run over", GUIDE, maxsplit=1)[1]
TERMINAL, CSV_TEXT = re.findall(r"```text\n(.*?)```", AFTER_SAMPLE, re.S)[:2]
ROWS = list(csv.DictReader(io.StringIO(CSV_TEXT)))
EXERCISES = {p.name[:2]: nbformat.read(p, as_version=4).metadata["course"]["exercises"] for p in chapters(SOLUTIONS)}


def test_sample_csv_has_the_graders_columns():
    assert CSV_TEXT.splitlines()[0] == ",".join(CSV_COLUMNS)
    assert ROWS


def test_each_graded_submission_has_one_row_per_exercise_of_its_chapter():
    for submission in dict.fromkeys(r["submission"] for r in ROWS):
        rows = [r for r in ROWS if r["submission"] == submission]
        if any(r["status"] == "invalid" for r in rows):
            continue
        assert [r["exercise"] for r in rows] == EXERCISES[rows[0]["chapter"]], submission


def string_constants(path) -> str:
    """Every string literal of a module, one per line; adjacent literals ("a " "b") are one (the AST joins them)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return "\n".join(node.value for node in ast.walk(tree)
                     if isinstance(node, ast.Constant) and isinstance(node.value, str))


def test_passed_messages_are_the_checks_own_words():
    for row in ROWS:
        if row["status"] == "passed":
            module = string_constants(ROOT / "helpers" / "checks" / f"chapter_{row['chapter']}.py")
            assert row["message"] in module, f"{row['exercise']}: the check no longer says {row['message']!r}"


def test_terminal_excerpt_agrees_with_the_csv():
    summary = re.search(r"graded (\d+) file\(s\): (\d+)/(\d+) exercises passed", TERMINAL)
    assert summary, "the terminal excerpt lacks the grader's last line"
    files, passed, total = map(int, summary.groups())
    assert files == len({r["submission"] for r in ROWS})
    assert (passed, total) == (sum(r["status"] == "passed" for r in ROWS), len(ROWS))
    shown = re.search(r"^== (\S+)", TERMINAL, re.M).group(1)
    for row in [r for r in ROWS if r["submission"] == shown]:
        assert re.search(rf"^{re.escape(row['exercise'])} +{row['status']} +{re.escape(row['message'])}$",
                         TERMINAL, re.M), row
