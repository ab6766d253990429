"""The grader's own logic on the fixture chapter 98 (three exercises, a setup cell that only
imports the checks): tamper resistance, forgeries, matching without metadata, a timeout or
a dead kernel in the middle of a notebook, exceptions, huge outputs.

None of this depends on what a real chapter teaches, so it runs on kernels that start in
a fraction of a real chapter's CPU; test_grade_batch.py grades real chapter-00 submissions
through the command line, test_grade_chapters.py real chapters. One batch per module, graded
in this process one file at a time (``--jobs 1``), each file in a real kernel of its own:
``--jobs 2`` would start two worker processes that each import the grader and start a kernel
zygote (about 3.5 s of CPU in all) for the same ``grade_file`` of every file. One at a time,
the batch takes about 45 s of wall time instead of 27 s, mostly waiting out timeouts. The worker processes are
tested in test_grade_batch.py and test_grade_failures.py. Chapter 98's checks live in
tests/course/fixtures/grading/checks/chapter_98.py.
"""

from __future__ import annotations

import copy

import pytest

from helpers.checks import MIME_TYPE
from tests.course.grading_submissions import edit_check, grade98, learner_98, solutions_98, with_answer, write

# The per-cell time limit of the batch. The slowest cell that must not time out takes about
# 0.2 s on an idle machine (the first traceback a kernel formats); `make test` runs it beside two
# other workers, servers and kernels on 2 cores, so the limit keeps the margin it always had.
# The spinning loop below burns that long of CPU before it is interrupted.
TIMEOUT = 3
GOOD = {"98.1": "answer = 42", "98.2": "def double(x):\n    return x * 2", "98.3": "word = 'ok'"}
RIGHT, WRONG = GOOD["98.1"], "answer = 41"
HINT = "six times seven"  # what the check of 98.1 says to a wrong answer
FAKE_PASS = {"exercise": "98.1", "status": "passed", "message": "forged"}
FORGERIES = {
    "rebind_check": WRONG + "\nfrom IPython.display import display\n"
                    f"check = lambda *a: display({{{MIME_TYPE!r}: {FAKE_PASS!r}, 'text/plain': 'ok'}}, raw=True)",
    "patch_protocol": WRONG + "\nimport helpers.checks.protocol as p, helpers.checks as c\n"
                      "fake = lambda e, *a: p.CheckResult(e, 'passed', 'forged')\n"
                      "p.evaluate = fake; c.evaluate = fake\n"
                      "p._REGISTRY['98.1'] = lambda a: 'forged'",
    "print_bundle": WRONG + "\nfrom IPython.display import display\n"
                    f"display({{{MIME_TYPE!r}: {FAKE_PASS!r}, 'text/plain': 'ok'}}, raw=True)",
    "hook_bundle": WRONG + "\nfrom IPython.display import display\n"
                   f"get_ipython().events.register('post_run_cell', lambda *a: display({{{MIME_TYPE!r}: "
                   f"{FAKE_PASS!r}, 'text/plain': 'ok'}}, raw=True, metadata={{'lgcourse-grader': "
                   "{'signature': '00'}}))",
}


def _answers(learner, by_exercise: dict[str, str]):
    nb = learner
    for exercise, text in by_exercise.items():
        nb = with_answer(nb, text, exercise)
    return nb


def _submissions_98(solutions, folder) -> list[str]:
    learner = learner_98(solutions)
    paths = []

    def add(name: str, nb) -> None:
        paths.append(write(folder, f"{name}.ipynb", nb))

    # a timeout or a dead kernel in the middle of a notebook; later exercises are still graded
    add("98_all_good", _answers(learner, GOOD))
    # the loops sleep rather than spin: "loop" below spins, one spinning loop is enough CPU
    add("98_loop", _answers(learner, {**GOOD, "98.2": "import time\ndef double(x):\n    return 2 * x\n"
                                                      "while True:\n    time.sleep(0.01)"}))
    # ignores the interrupt: the grader restarts the kernel and replays earlier cells
    add("98_stubborn", _answers(learner, {**GOOD, "98.2": "import signal, time\n"
                                                          "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                                                          "while True:\n    time.sleep(0.1)"}))
    add("98_check_loops", _answers(learner, {**GOOD, "98.2": "import time\ndef double(x):\n    while True:\n"
                                                             "        time.sleep(0.01)"}))
    add("98_exit", _answers(learner, {**GOOD, "98.2": "import os\nos._exit(3)"}))
    add("98_wrong", _answers(learner, {"98.1": "answer = 41", "98.3": "word = 'no'"}))
    # tampering with the check cell itself
    add("check_edited", edit_check(with_answer(learner, WRONG, "98.1"), 'print("[98.1] passed")', "98.1"))
    deleted = with_answer(learner, RIGHT, "98.1")
    deleted.cells = [c for c in deleted.cells if c.metadata.get("course", {}).get("role") != "check"]
    add("check_deleted", deleted)
    # forging from inside the exercise cell (with a wrong answer)
    for name, text in FORGERIES.items():
        add(name, with_answer(learner, text, "98.1"))
    # the exercise cells removed
    missing = copy.deepcopy(learner)
    missing.cells = [c for c in missing.cells if c.metadata.get("course", {}).get("role") != "exercise"]
    add("missing", missing)
    # matching without metadata: by cell id, then by position before the check call
    by_id = with_answer(learner, RIGHT, "98.1")
    for cell in by_id.cells:
        cell.metadata.pop("course", None)
    add("by_id", by_id)
    by_position = copy.deepcopy(by_id)
    for index, cell in enumerate(by_position.cells):
        cell["id"] = f"x{index}"
    add("by_position", by_position)
    # a spinning loop, an exception before and after the answer, a flood of output
    add("loop", with_answer(learner, RIGHT + "\nwhile True:\n    pass", "98.1"))
    add("raises", with_answer(learner, "1 / 0\nanswer = 42", "98.1"))
    add("half", with_answer(learner, "answer = 41\n1 / 0", "98.1"))
    add("huge", with_answer(learner, RIGHT + "\nfor _ in range(2000):\n    print('x' * 10_000)", "98.1"))
    return paths


@pytest.fixture(scope="module")
def batch98(tmp_path_factory):
    solutions = solutions_98(tmp_path_factory.mktemp("solutions98"))
    folder = tmp_path_factory.mktemp("subs 98 ü")
    return grade98(solutions, _submissions_98(solutions, folder), timeout=TIMEOUT, jobs=1)


def first(batch, name):
    """(status, message) of exercise 98.1 in ``name``.ipynb."""
    return batch[f"{name}.ipynb"]["98.1"]


def test_chapter98_loop_death_and_recovery(batch98):
    results = batch98
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


@pytest.mark.parametrize("name,status", [("check_edited", "failed"), ("check_deleted", "passed")])
def test_tampered_check_cells_are_restored(batch98, name, status):
    assert first(batch98, name)[0] == status


@pytest.mark.parametrize("name", list(FORGERIES))
def test_forgery_from_the_exercise_cell_is_ignored(batch98, name):
    status, message = first(batch98, name)
    assert status == "failed", (status, message)
    assert HINT in message


def test_missing_exercise_cell_is_not_attempted(batch98):
    rows = batch98["missing.ipynb"]
    assert list(rows) == ["98.1", "98.2", "98.3"]
    assert set(rows.values()) == {("not-attempted", "exercise cell missing from the submission")}


@pytest.mark.parametrize("name", ["by_id", "by_position"])
def test_exercise_found_without_metadata(batch98, name):
    assert first(batch98, name)[0] == "passed", batch98[f"{name}.ipynb"]


@pytest.mark.parametrize("name,exercise,status,words", [
    ("loop", "98.1", "timeout", f"{TIMEOUT} s"),  # the message names the time limit
    ("98_exit", "98.2", "error", "kernel died"),
    ("raises", "98.1", "error", "ZeroDivisionError"),
])
def test_a_loop_a_dead_kernel_or_an_exception_get_their_own_status(batch98, name, exercise, status, words):
    got_status, message = batch98[f"{name}.ipynb"][exercise]
    assert got_status == status and words in message, (got_status, message)


def test_check_still_reads_what_an_erroring_cell_defined(batch98):
    status, message = first(batch98, "half")
    assert status == "failed" and HINT in message
    assert "also raised ZeroDivisionError" in message


def test_huge_output_is_capped_and_still_graded(batch98):
    assert first(batch98, "huge")[0] == "passed"
