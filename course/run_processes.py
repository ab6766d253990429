"""Which processes a test run started, and which course servers live anywhere on this machine.

The test run's own machinery (used by :mod:`course.owned_test_run`, :mod:`course.lab_session`
and the server tests); no chapter imports it, so it lives here and not in
:mod:`helpers.servers`, which keeps what chapters use (``postgres_server``, ``agent_server``,
``leftover_server_processes``). A run is told apart by :data:`helpers.servers.RUN_ENV` in a
process's environment; a course server by :data:`helpers.servers.TEMP_PREFIX` in its command
line or working directory. Processes are inspected with psutil (Linux and macOS).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import psutil

from helpers.servers import RUN_ENV, TEMP_PREFIX

__all__ = ["describe", "processes_of_run", "run_processes", "stray_servers_on_this_machine"]


def describe(proc: psutil.Process) -> str:
    """``process PID: command line`` (cut at 120 characters; ``?`` when it cannot be read)."""
    try:
        command = " ".join(proc.cmdline()) or proc.name()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        command = "?"
    return f"process {proc.pid}: {command.strip()[:120]}"


def run_processes(run: str, exclude: frozenset[int] = frozenset()) -> list[psutil.Process]:
    """Live processes whose environment has ``RUN_ENV=run`` (this process and ``exclude`` left out)."""
    found = []
    for proc in psutil.process_iter(["status"]):
        if proc.pid == os.getpid() or proc.pid in exclude or proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        try:
            if proc.environ().get(RUN_ENV) == run:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue  # exited meanwhile, or not ours to read (then it is not ours either)
    return found


def processes_of_run(run: str, exclude: frozenset[int] = frozenset()) -> list[str]:
    """The live processes of run ``run``, one line each: their environment has ``RUN_ENV=run``.

    A test session sets :data:`~helpers.servers.RUN_ENV`; its workers, their kernels, the
    servers those start and every child inherit it. Processes of other runs, and a
    learner's own kernels and servers, carry another value or none, so they are never
    counted. ``exclude``: PIDs to leave out (besides this process).
    """
    return [describe(proc) for proc in run_processes(run, exclude)]


def stray_servers_on_this_machine() -> list[str]:
    """Course servers and their temporary directories from ANY process on this machine.

    :func:`helpers.servers.leftover_server_processes` knows only this process's servers;
    this looks at every process we may inspect (its command line or working directory
    names a course server directory) and at the temp folder. It includes other clones'
    and other runs' servers: a test run must use :func:`processes_of_run` to judge only its own.
    """
    found = [f"temporary directory {d}" for d in sorted(Path(tempfile.gettempdir()).glob(f"{TEMP_PREFIX}*"))]
    for proc in psutil.process_iter(["status"]):
        if proc.pid == os.getpid() or proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        try:
            where = " ".join(proc.cmdline()) + " " + proc.cwd()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
        if TEMP_PREFIX in where:
            found.append(describe(proc))
    return found
