"""course.run_processes: a test run's own processes, and course servers anywhere on the machine."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from course import run_processes
from helpers import servers


def _eventually(found, deadline: float = 10.0) -> bool:
    # between fork and exec a child still shows its parent's environment and command line
    end = time.monotonic() + deadline
    while not found():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def test_a_run_s_processes_are_told_apart_by_their_run_tag(tmp_path: Path) -> None:
    run = f"test-{secrets.token_hex(4)}"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             env={**os.environ, servers.RUN_ENV: run})
    try:
        assert _eventually(lambda: any(f"process {child.pid}:" in line
                                       for line in run_processes.processes_of_run(run)))
        assert [p.pid for p in run_processes.run_processes(run)] == [child.pid]
        assert run_processes.processes_of_run(run, exclude=frozenset({child.pid})) == []
        assert not [line for line in run_processes.processes_of_run(f"{run}-other") if f"{child.pid}:" in line]
    finally:
        child.kill()
        child.wait()
    assert _eventually(lambda: run_processes.processes_of_run(run) == [])


def test_stray_servers_are_course_temp_dirs_and_the_processes_in_them(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    workdir = tmp_path / f"{servers.TEMP_PREFIX}probe-{secrets.token_hex(4)}"
    workdir.mkdir()
    (tmp_path / "not-a-course-server").mkdir()
    monkeypatch.setattr(run_processes.tempfile, "gettempdir", lambda: str(tmp_path))
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], cwd=workdir)
    try:
        assert _eventually(lambda: any(f"process {child.pid}:" in line
                                       for line in run_processes.stray_servers_on_this_machine()))
        found = run_processes.stray_servers_on_this_machine()
        assert f"temporary directory {workdir}" in found
        assert not [line for line in found if "not-a-course-server" in line]
    finally:
        child.kill()
        child.wait()


def test_helpers_servers_keeps_only_what_chapters_use() -> None:
    # the test run's machinery moved to course/ (issue 29): no chapter imports it
    for name in ("processes_of_run", "run_processes", "stray_servers_on_this_machine"):
        assert not hasattr(servers, name) and name not in servers.__all__
    assert {"postgres_server", "agent_server", "leftover_server_processes"} <= set(servers.__all__)
