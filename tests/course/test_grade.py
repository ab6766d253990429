"""The grader: statuses, tamper resistance, timeouts, dead kernels, bad files, CSV.

Most cases use chapter 00 (exercise 00.1: ``kinds = {...}``) through the public CLI, in one
batch per module so the kernels start in parallel. Cases that need several exercises in
one notebook (a timeout or a dead kernel in the middle) use a small fixture chapter 98
whose checks live in tests/course/fixtures/grading/checks/chapter_98.py.
"""

from __future__ import annotations

import asyncio
import copy
import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from course import grade
from helpers.checks import MIME_TYPE
from tests.course.grading_batch import left_behind

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "grading"
SOLUTION_00 = ROOT / "solutions" / "00_start_here.ipynb"
RIGHT = 'kinds = {"visa": "time", "itinerary": "steps", "laptop": "failure"}'
WRONG = 'kinds = {"visa": "steps", "itinerary": "steps", "laptop": "failure"}'
FAKE_PASS = {"exercise": "00.1", "status": "passed", "message": "forged"}


def learner_00():
    return grade.pristine_learner_copy(SOLUTION_00)


def with_answer(nb, text, exercise="00.1"):
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        course = cell.metadata.get("course", {})
        if course.get("role") == "exercise" and course.get("exercise") == exercise:
            cell.source = text
    return nb


def edit_check(nb, text, exercise="00.1"):
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        course = cell.metadata.get("course", {})
        if course.get("role") == "check" and course.get("exercise") == exercise:
            cell.source = text
    return nb


def write(folder: Path, name: str, nb) -> str:
    path = folder / name
    nbformat.write(nb, path)
    return str(path)


def run_cli(*args, timeout=600, env=None):
    return subprocess.run([sys.executable, "-m", "course.grade", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, env=env)


# --------------------------------------------------------------------------- chapter 00, one CLI batch

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


def test_infinite_loop_times_out(batch00):
    row = one(batch00, "loop")
    assert row["status"] == "timeout" and "3 s" in row["message"]


def test_kernel_death_is_an_error(batch00):
    row = one(batch00, "exit")
    assert row["status"] == "error" and "kernel died" in row["message"]


def test_exercise_that_raises_is_an_error(batch00):
    row = one(batch00, "raises")
    assert row["status"] == "error" and "ZeroDivisionError" in row["message"]


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


def test_submission_file_is_never_modified(tmp_path):
    path = write(tmp_path, "00_sub.ipynb", with_answer(learner_00(), RIGHT))
    before = Path(path).read_bytes()
    graded = grade.grade_file(path, timeout=30)
    assert [r.status for r in graded.rows] == ["passed"]
    assert Path(path).read_bytes() == before


def test_usage_errors_exit_2(tmp_path, capsys):
    assert run_cli().returncode == 2  # the real command line once; the rest in-process
    for args in ([str(SOLUTION_00), "--timeout", "0"], [str(SOLUTION_00), "--csv", str(tmp_path / "no" / "dir.csv")]):
        with pytest.raises(SystemExit) as exit_info:
            grade.main(args)
        assert exit_info.value.code == 2, args


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
        "98_loop.ipynb": {**good, "98.2": "def double(x):\n    return 2 * x\nwhile True:\n    pass"},
        # ignores the interrupt: the grader restarts the kernel and replays earlier cells
        "98_stubborn.ipynb": {**good, "98.2": "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                                              "while True:\n    time.sleep(0.1)"},
        "98_check_loops.ipynb": {**good, "98.2": "def double(x):\n    while True:\n        pass"},
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


def test_signed_result_rejects_forgeries():
    key = "k" * 64
    good = {"exercise": "01.1", "status": "passed", "message": "fine"}

    def out(payload, sig):
        return {"output_type": "display_data", "data": {MIME_TYPE: payload},
                "metadata": {grade.SIGNATURE_KEY: {"signature": sig}}}

    signature = grade.sign(key, "01.1", "passed", "fine")
    assert grade.signed_result([out(good, signature)], key, "01.1") == good
    assert grade.signed_result([out(good, grade.sign("other", "01.1", "passed", "fine"))], key, "01.1") is None
    assert grade.signed_result([out({**good, "message": "changed"}, signature)], key, "01.1") is None
    assert grade.signed_result([out(good, signature)], key, "01.2") is None
    assert grade.signed_result([{"output_type": "stream", "text": "[01.1] passed"}], key, "01.1") is None


def test_identify_chapter_prefers_metadata_then_file_name(tmp_path):
    solutions = ROOT / "solutions"
    nb = learner_00()
    assert grade.identify_chapter(nb, "whatever.ipynb", solutions).name == "00_start_here.ipynb"
    nb.metadata["course"] = {"slug": "../../etc/passwd", "chapter": "00"}
    assert grade.identify_chapter(nb, "x.ipynb", solutions).name == "00_start_here.ipynb"
    assert grade.identify_chapter(None, "student42_00_start_here-Copy1.ipynb", solutions).name == "00_start_here.ipynb"
    assert grade.identify_chapter(None, "notes.ipynb", solutions) is None


def test_check_modules_import_the_protocol_relatively():
    """The grader loads a fresh copy of helpers/checks under a private package name: a
    chapter module must reach the protocol as ``from .protocol import ...`` (an absolute
    ``helpers.checks.protocol`` import would hand it the kernel's copy, which a learner's
    cell may have patched, and its ``Fail`` would not be the fresh one)."""
    for path in sorted((ROOT / "helpers" / "checks").glob("chapter_*.py")):
        text = path.read_text(encoding="utf-8")
        assert "from .protocol import" in text, path.name
        assert "helpers.checks" not in text, f"{path.name}: import the protocol relatively"


# --------------------------------------------------------------------------- the grader's own failures (issue 16)

def test_kernel_with_a_short_temp_dir_keeps_its_sockets_inside_its_folder(monkeypatch):
    with tempfile.TemporaryDirectory(prefix="g-", dir="/tmp") as short:
        monkeypatch.setattr(tempfile, "tempdir", short)
        kernel = grade.GradingKernel()
        assert kernel.short_sockets is None and kernel.manager.ip == str(kernel.folder / "k" / "s")
        asyncio.run(kernel.stop(NotebookClient(nbformat.v4.new_notebook(), km=kernel.manager)))
        assert os.listdir(short) == []


def test_a_batch_in_a_deep_temp_dir_keeps_its_kernels_in_a_short_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / ("deep" * 20)))
    os.mkdir(tempfile.tempdir)
    scratch = Path(grade.kernels.scratch_folder())
    try:
        assert scratch.parent == Path("/tmp") and scratch.name.startswith("lgcourse-batch-")
        kernel = grade.GradingKernel(str(scratch))
        assert kernel.short_sockets is None and kernel.folder.parent == scratch
        asyncio.run(kernel.stop(NotebookClient(nbformat.v4.new_notebook(), km=kernel.manager)))
    finally:
        scratch.rmdir()


@pytest.mark.skipif(os.name != "posix", reason="IPC sockets are POSIX only; Windows keeps TCP")
def test_kernel_talks_over_ipc_in_a_private_folder_that_is_removed(tmp_path, monkeypatch):
    """No loopback ports to lose to another process, no "TCP without encryption" warning,
    and after stop(): no kernel process, no connection file, no socket, no folder."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    kernel = grade.GradingKernel()
    client = NotebookClient(nbformat.v4.new_notebook(), km=kernel.manager)
    seen = {}

    async def run():
        await kernel.start(client)
        try:
            seen["info"] = json.loads(Path(kernel.manager.connection_file).read_text())
            seen["files"] = sorted(p.name for p in (kernel.folder / "k").iterdir())
            seen["sockets"] = sorted(p.name for p in kernel.short_sockets.iterdir())
            outputs = []
            await client.kc.execute_interactive("import os; print(os.getpid(), os.getcwd())", timeout=60,
                                                output_hook=outputs.append)
            seen["pid_cwd"] = next(m["content"]["text"] for m in outputs if m["msg_type"] == "stream").split()
        finally:
            await kernel.stop(client)

    asyncio.run(run())
    assert seen["info"]["transport"] == "ipc"
    # pytest's tmp_path is deep: the sockets get a short folder of their own (sun_path limit)
    assert kernel.short_sockets is not None and Path(seen["info"]["ip"]).parent == kernel.short_sockets
    assert seen["files"] == ["kernel.json"] and len(seen["sockets"]) == 5
    pid, cwd = seen["pid_cwd"]
    assert Path(cwd) == kernel.folder / "work"
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid), 0)
    assert list(tmp_path.iterdir()) == [] and not kernel.short_sockets.exists()


def test_a_kernel_that_cannot_start_is_an_internal_error_row(tmp_path, monkeypatch):
    """What a lost port race looked like (issue 16), forced: the kernel exits at start."""
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "ipykernel_launcher.py").write_text("raise SystemExit(3)\n", encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(fake))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    graded = grade.grade_file(write(tmp_path, "00_sub.ipynb", with_answer(learner_00(), RIGHT)), timeout=30)
    assert graded.internal_error
    [row] = graded.rows
    assert (row.chapter, row.exercise, row.status) == ("00", "", "error")
    assert row.message.startswith("internal grader error while starting the kernel: RuntimeError: Kernel died")
    assert list(scratch.iterdir()) == []


def test_a_file_that_breaks_the_grader_gets_a_row_and_the_others_are_graded(tmp_path):
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    (solutions / SOLUTION_00.name).write_bytes(SOLUTION_00.read_bytes())
    (solutions / "97_broken.ipynb").write_text("not JSON", encoding="utf-8")  # a damaged course checkout
    broken = write(tmp_path, "97_mine.ipynb", nbformat.v4.new_notebook())
    right = write(tmp_path, "00_right.ipynb", with_answer(learner_00(), RIGHT))
    out_csv = tmp_path / "grades.csv"
    proc = run_cli(broken, right, "--solutions", solutions, "--csv", out_csv, "--jobs", 2)
    assert proc.returncode == 1
    assert "the grader itself failed on 1 file(s)" in proc.stderr and broken in proc.stderr
    with open(out_csv, encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["submission"], r["chapter"], r["exercise"], r["status"]) for r in rows] == [
        (broken, "", "", "error"), (right, "00", "00.1", "passed")]
    assert rows[0]["message"].startswith("internal grader error while building the graded notebook from "
                                         "97_broken.ipynb: NotJSONError: ")


def test_a_submission_that_kills_its_worker_does_not_stop_the_batch(tmp_path):
    """The kernel's parent is the worker process grading it: killing it breaks the pool.
    That file gets an internal-error row; the others are graded again and get theirs."""
    killer = write(tmp_path, "00_killer.ipynb", with_answer(learner_00(), "import os, signal\n"
                                                                       "os.kill(os.getppid(), signal.SIGKILL)"))
    right = write(tmp_path, "00_right.ipynb", with_answer(learner_00(), RIGHT))
    wrong = write(tmp_path, "00_wrong.ipynb", with_answer(learner_00(), WRONG))
    out_csv = tmp_path / "grades.csv"
    with tempfile.TemporaryDirectory(prefix="g-", dir="/tmp") as private_tmp:  # short: the sockets fit inside
        proc = run_cli(killer, right, wrong, "--csv", out_csv, "--jobs", 2, "--timeout", 30,
                       env={**os.environ, "TMPDIR": private_tmp})
        # the orphaned kernels exit by themselves (ipykernel watches its parent), the batch folder is gone
        for _ in range(30):
            if not left_behind(Path(private_tmp)):
                break
            time.sleep(1)
        assert left_behind(Path(private_tmp)) == []
    assert proc.returncode == 1, proc.stderr
    with open(out_csv, encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["submission"], r["status"]) for r in rows] == [(killer, "error"), (right, "passed"), (wrong, "failed")]
    assert rows[0]["message"].startswith("internal grader error while grading it in a worker process: "
                                         "BrokenProcessPool")


@pytest.mark.parametrize("jobs", [1, 2])
def test_ctrl_c_stops_the_batch_and_leaves_nothing_behind(tmp_path, jobs):
    """Ctrl-C in the instructor's terminal (SIGINT to the whole process group) while kernels run."""
    loops = [write(tmp_path, f"00_loop{i}.ipynb", with_answer(learner_00(), RIGHT + "\nwhile True:\n    pass"))
             for i in range(3)]
    with tempfile.TemporaryDirectory(prefix="g-", dir="/tmp") as private_tmp:
        proc = subprocess.Popen([sys.executable, "-m", "course.grade", *loops, "--jobs", str(jobs)], cwd=ROOT,
                                env={**os.environ, "TMPDIR": private_tmp}, start_new_session=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 300
            while not list(Path(private_tmp).glob("**/k/kernel.json")) and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(1)
            os.killpg(proc.pid, signal.SIGINT)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        assert proc.returncode == 130, err
        assert "interrupted: 0 of 3 file(s) graded" in err
        assert left_behind(Path(private_tmp)) == []
