"""The grader's parts, without a batch: signed results, chapter identification, the check
modules' relative imports, the command line's usage errors, and the grading kernel (IPC
sockets in a private folder that is removed).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from course import grade
from helpers.checks import MIME_TYPE
from tests.course.grading_submissions import RIGHT, ROOT, SOLUTION_00, learner_00, run_cli, with_answer, write


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


HEAVY = ("nbformat", "nbclient", "jsonschema")


def test_the_command_line_and_the_batch_import_no_notebook_machinery():
    """A batch's main process only hands files to workers: importing nbformat, nbclient and
    jsonschema there would cost about 1.3 s of CPU per grader run for nothing."""
    code = ("import sys; import course.grade, course.grade.cli, course.grade.batch; "
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]", proc.stdout


def test_every_public_name_of_the_package_resolves():
    assert len(grade.__all__) == 43 and "grade_file" in grade.__all__ and "main" in grade.__all__
    for name in grade.__all__:
        assert getattr(grade, name) is not None, name
    assert grade.grade_file.__module__ == "course.grade.submission" and grade.kernels.__name__ == "course.grade.kernels"
    assert set(dir(grade)) >= set(grade.__all__) | {"batch", "submission"}
    with pytest.raises(AttributeError):
        grade.no_such_name  # noqa: B018


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
