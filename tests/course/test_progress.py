"""The learner's progress report: the grader over a folder of the learner's notebooks."""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys

import nbformat

from course import grade, progress
from course.layout import ROOT, SOLUTIONS

SOLUTION_00 = SOLUTIONS / "00_start_here.ipynb"


def test_progress_on_a_folder_of_copies(tmp_path):
    learner = grade.pristine_learner_copy(SOLUTION_00)
    wrong = copy.deepcopy(learner)
    for cell in wrong.cells:
        if cell.metadata.get("course", {}).get("role") == "exercise":
            cell.source = 'kinds = {"laptop": "failure", "visa": "steps", "refund": "time", "itinerary": "steps"}'
    nbformat.write(wrong, tmp_path / SOLUTION_00.name)
    entries = progress.collect(tmp_path, timeout=30, jobs=1)
    by_chapter = {e["chapter"]: e for e in entries}
    assert list(by_chapter) == sorted(grade.chapter_solutions(grade.SOLUTIONS))
    first = by_chapter["00"]
    assert (first["title"], first["passed"], first["total"], first["failed"]) == ("Start here", 0, 1, 1)
    assert not first["missing"]
    text = progress.format_progress(entries)
    header = text.splitlines()[0].split()
    assert header[:3] == ["chapter", "title", "passed"] and "failed" in header
    assert "[00.1] failed:" in text and "long time span" in text
    for number, entry in by_chapter.items():
        if number != "00":  # chapters not in the folder: listed, nothing graded
            assert entry["missing"] and entry["passed"] == 0
            assert entry["not_attempted"] == entry["total"]
    if len(by_chapter) > 1:
        assert text.splitlines()[-1] == "Next exercise to try: 01.1 in 01_threads.ipynb"


def test_progress_cli_all_passed(tmp_path, capsys):
    """The command line's main() in this process, so its kernel is forked from this process's
    kernel zygote (started by the test above when both run): a ``python -m course.progress``
    child would import the grader and start a zygote of its own, about 3 s of CPU. The real
    command line runs once, below."""
    shutil.copy(SOLUTION_00, tmp_path / SOLUTION_00.name)
    assert progress.main(["--folder", str(tmp_path), "--timeout", "30"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("00 "))
    assert "1/1" in row and "Start here" in row


def test_progress_cli_usage_error(tmp_path):
    """The real command line (``python -m course.progress``), once: a folder that does not exist."""
    proc = subprocess.run([sys.executable, "-m", "course.progress", "--folder", str(tmp_path / "nope")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2
