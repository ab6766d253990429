"""The grader on real chapters (solutions pass, learner copies are not attempted) and on a
fixture chapter 98 with three exercises: a timeout or a dead kernel in the middle of a
notebook. Chapter 98's checks live in tests/course/fixtures/grading/checks/chapter_98.py.
"""

from __future__ import annotations

import csv
from pathlib import Path

import nbformat
import pytest

from course import grade
from tests.course.grading_submissions import FIXTURES, ROOT, run_cli, with_answer, write

# --------------------------------------------------------------------------- every chapter

# Grading every chapter costs as much as nbval itself; `make grade-course` does that. Here a
# sample (chapter 00 is graded above) with functions, graph nodes and a concurrent SQL
# function proves the pristine-restore and signing path on real chapters.
GRADED_IN_TEST_RUN = ("01", "10")


def test_solutions_pass_and_learner_copies_are_not_attempted(tmp_path):
    out_csv = tmp_path / "all.csv"
    paths = [p for folder in ("solutions", "notebooks") for p in sorted((ROOT / folder).glob("[0-9][0-9]_*.ipynb"))
             if p.name[:2] in GRADED_IN_TEST_RUN]
    assert len(paths) == 2 * len(GRADED_IN_TEST_RUN)
    proc = run_cli(*paths, "--csv", out_csv, "--jobs", 2, timeout=1800)
    assert proc.returncode == 0, proc.stderr
    with open(out_csv, encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    solution_rows = [r for r in rows if "/solutions/" in r["submission"]]
    learner_rows = [r for r in rows if "/notebooks/" in r["submission"]]
    assert solution_rows and learner_rows
    assert [r for r in solution_rows if r["status"] != "passed"] == []
    assert [r for r in learner_rows if r["status"] != "not-attempted"] == []
    for path in paths[: len(GRADED_IN_TEST_RUN)]:
        expected = grade.exercise_ids(nbformat.read(path, as_version=4))
        assert [r["exercise"] for r in solution_rows if Path(r["submission"]).name == path.name] == expected


# --------------------------------------------------------------------------- fixture chapter 98

def chapter_98_solution():
    cells = [
        nbformat.v4.new_markdown_cell("# 98 · Fixture\n\n**Time:** 5 minutes."),
        nbformat.v4.new_code_cell("from helpers.checks import check"),
        nbformat.v4.new_code_cell("### BEGIN SOLUTION\nanswer = 42\n### END SOLUTION"),
        nbformat.v4.new_code_cell('check("98.1", answer)'),
        nbformat.v4.new_code_cell("### BEGIN SOLUTION\ndef double(x):\n    return 2 * x\n### END SOLUTION"),
        nbformat.v4.new_code_cell('check("98.2", double)'),
        nbformat.v4.new_code_cell("### BEGIN SOLUTION\nword = 'ok'\n### END SOLUTION"),
        nbformat.v4.new_code_cell('check("98.3", word)'),
    ]
    return nbformat.v4.new_notebook(cells=cells)


@pytest.fixture(scope="module")
def chapter98(tmp_path_factory):
    solutions = tmp_path_factory.mktemp("solutions98")
    nbformat.write(chapter_98_solution(), solutions / "98_fixture.ipynb")
    return solutions


def grade98(solutions, folder, answers: dict[str, dict[str, str]], timeout=3):
    learner = grade.pristine_learner_copy(solutions / "98_fixture.ipynb")
    paths = []
    for name, by_exercise in answers.items():
        nb = learner
        for exercise, text in by_exercise.items():
            nb = with_answer(nb, text, exercise)
        paths.append(write(folder, name, nb))
    results = grade.grade_paths(paths, timeout=timeout, jobs=2, solutions=str(solutions),
                                checks_dirs=[str(FIXTURES / "checks")])
    return {Path(g.submission).name: {r.exercise: (r.status, r.message) for r in g.rows} for g in results}


def test_chapter98_loop_death_and_recovery(chapter98, tmp_path):
    good = {"98.1": "answer = 42", "98.2": "def double(x):\n    return x * 2", "98.3": "word = 'ok'"}
    results = grade98(chapter98, tmp_path, {
        "98_all_good.ipynb": good,
        # the loops sleep rather than spin: the chapter-00 batch has a spinning one, and
        # here a spinning loop would only burn a core for the whole timeout
        "98_loop.ipynb": {**good, "98.2": "import time\ndef double(x):\n    return 2 * x\nwhile True:\n"
                                          "    time.sleep(0.01)"},
        # ignores the interrupt: the grader restarts the kernel and replays earlier cells
        "98_stubborn.ipynb": {**good, "98.2": "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                                              "while True:\n    time.sleep(0.1)"},
        "98_check_loops.ipynb": {**good, "98.2": "import time\ndef double(x):\n    while True:\n"
                                                "        time.sleep(0.01)"},
        "98_exit.ipynb": {**good, "98.2": "import os\nos._exit(3)"},
        "98_wrong.ipynb": {"98.1": "answer = 41", "98.3": "word = 'no'"},
    })
    all_good = {e: s for e, (s, _) in results["98_all_good.ipynb"].items()}
    assert all_good == {"98.1": "passed", "98.2": "passed", "98.3": "passed"}
    for name in ("98_loop.ipynb", "98_stubborn.ipynb", "98_check_loops.ipynb"):
        statuses = {e: s for e, (s, _) in results[name].items()}
        assert statuses == {"98.1": "passed", "98.2": "timeout", "98.3": "passed"}, (name, results[name])
    assert "checking the answer" in results["98_check_loops.ipynb"]["98.2"][1]
    died = results["98_exit.ipynb"]
    assert died["98.1"][0] == "passed"
    assert died["98.2"][0] == "error" and "kernel died" in died["98.2"][1]
    assert died["98.3"][0] == "error" and "not graded" in died["98.3"][1]
    wrong = results["98_wrong.ipynb"]
    assert wrong["98.1"] == ("failed", "41 is not it; hint: six times seven")
    assert wrong["98.2"][0] == "not-attempted"
    assert wrong["98.3"] == ("failed", "hint: the word is 'ok'")
