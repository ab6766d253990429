"""Starting, waiting for and stopping a server process, and finding what was left behind.

A server runs in a process group of its own, so that stopping the group reaches every
worker it forked. Next to it runs a watchdog (:mod:`helpers.servers.watchdog`) that stops
the group when the owning Python process dies without stopping it (a restarted Jupyter
kernel is SIGKILLed); on Linux the kernel's parent-death signal stops it even sooner.
Processes are inspected with psutil, so the same code runs on Linux and macOS.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import psutil

from .running import (
    LOG_MARKER,
    POLL_INTERVAL,
    PORT_ATTEMPTS,
    STARTED,
    STOP_GRACE,
    WORKDIRS,
    LaunchRecord,
    PortConflict,
    PortInUseError,
    ServerStartError,
    ports_to_try,
    with_log,
)

WATCHDOG_SCRIPT = Path(__file__).with_name("watchdog.py")
# Linux can also stop a server the instant its owner dies (prctl's parent-death signal);
# the watchdog gives every POSIX system the same guarantee. Tests switch this off to
# prove the watchdog alone is enough.
PARENT_DEATH_SIGNAL = sys.platform.startswith("linux")


def as_user(run_as: pwd.struct_passwd | None) -> dict[str, Any]:
    """subprocess arguments that run the child as ``run_as`` (nothing when None)."""
    if run_as is None:
        return {}
    return {"user": run_as.pw_uid, "group": run_as.pw_gid, "extra_groups": []}


def _die_with_parent(sig: int) -> Callable[[], None] | None:
    """Linux only: a preexec function asking the kernel to send ``sig`` to the server
    when this Python process dies, even by SIGKILL (a restarted Jupyter kernel).

    Strictly, the kernel watches the *thread* that started the server: start servers
    from the main thread (as notebooks and pytest do), not from a short-lived thread.
    The watchdog covers the other cases, and every other platform.
    """
    if not PARENT_DEATH_SIGNAL:
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up now, not in the forked child
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig, signum = 1, int(sig)

    def set_parent_death_signal() -> None:
        prctl(pr_set_pdeathsig, signum, 0, 0, 0)

    return set_parent_death_signal


def start_watchdog(pgid: int, stop_signal: int, workdir: Path) -> subprocess.Popen | None:
    """A watchdog (:mod:`helpers.servers.watchdog`) in process group ``pgid``, a child of this process.

    When this process dies, it stops the group and removes ``workdir``. None when the
    group is already gone. The group must belong to this process's session.
    """
    argv = [sys.executable, "-I", "-S", str(WATCHDOG_SCRIPT), str(os.getpid()), str(pgid), str(int(stop_signal)),
            str(STOP_GRACE), str(workdir)]
    try:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, cwd=workdir, process_group=pgid)
    except (OSError, subprocess.SubprocessError):  # the server exited at once: nothing to watch
        return None


def launch_process(name: str, argv: list[str], *, workdir: Path, log_path: Path, env: Mapping[str, str],
            cwd: Path, stop_signal: int, run_as: pwd.struct_passwd | None = None) -> LaunchRecord:
    """Start ``argv`` in a new process group with its output appended to ``log_path``, and its watchdog."""
    with open(log_path, "ab") as log:
        # A marker per attempt, so a retry on another port is not judged by the log
        # lines of the attempt before it.
        log.write(f"{LOG_MARKER} {' '.join(argv)}\n".encode())
        log.flush()
        # A process group of its own: stopping it reaches every worker the server forked,
        # and a Ctrl-C (KeyboardInterrupt) in the notebook does not hit the server directly.
        # (subprocess switches user before it calls preexec_fn, so the signal survives.)
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                cwd=cwd, env=dict(env), process_group=0,
                                preexec_fn=_die_with_parent(stop_signal),  # noqa: PLW1509 (one prctl call)
                                **as_user(run_as))
    record = LaunchRecord(name=name, proc=proc, workdir=workdir, stop_signal=stop_signal,
                     watchdog=start_watchdog(proc.pid, stop_signal, workdir))
    STARTED.append(record)
    return record


def wait_until_ready(proc: subprocess.Popen, name: str, is_ready: Callable[[], bool], *,
                      log_path: Path, timeout: float, port_conflict: Callable[[], bool]) -> None:
    """Poll ``is_ready`` until it is True; raise with the log tail on exit or timeout."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            kind = PortConflict if port_conflict() else ServerStartError
            raise kind(with_log(f"{name} exited with code {proc.returncode} before it was ready.", log_path))
        if port_conflict():
            raise PortConflict(with_log(f"{name} found its port taken.", log_path))
        if is_ready():
            return
        if time.monotonic() > deadline:
            raise ServerStartError(with_log(f"{name} was not ready after {timeout:.0f} s.", log_path))
        time.sleep(POLL_INTERVAL)


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group ``pgid``."""
    members = []
    for proc in psutil.process_iter(["status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        try:
            if os.getpgid(proc.pid) == pgid:
                members.append(proc.pid)
        except OSError:  # exited meanwhile, or (macOS) in another session: not one of ours
            continue
    return members


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def stop_launched(record: LaunchRecord, grace: float = STOP_GRACE) -> None:
    """Stop the server's whole process group: its stop signal, then SIGKILL after ``grace``."""
    proc = record.proc
    pgid = proc.pid  # process_group=0 made the server the leader of its own group
    if proc.poll() is None:
        _signal_group(pgid, record.stop_signal)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    # Kill whatever is left in the group, even when the leader exited by itself:
    # a forked worker outliving its parent would keep the port and the files. The
    # watchdog is a member too, and ends here.
    _signal_group(pgid, signal.SIGKILL)
    proc.wait()
    if record.watchdog is not None:
        record.watchdog.kill()  # normally gone with the group already; never leave it unreaped
        record.watchdog.wait()
    deadline = time.monotonic() + grace
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(POLL_INTERVAL)


def start_on_free_port(name: str, port: int | None, start: Callable[[int], LaunchRecord],
                        ready: Callable[[subprocess.Popen, int], None]) -> tuple[LaunchRecord, int]:
    """Start a server with ``start(port)`` and wait with ``ready``; retry other ports on a race."""
    error: ServerStartError | None = None
    for candidate in ports_to_try(port):
        record = start(candidate)
        try:
            ready(record.proc, candidate)
            return record, candidate
        except BaseException as exc:  # also KeyboardInterrupt: never leave a half-started server
            stop_launched(record)
            if not isinstance(exc, PortConflict):
                raise
            error = exc
    if port is not None:
        raise PortInUseError(f"port {port} was taken while {name} started.\n{error}")
    raise ServerStartError(f"{name} found no free port after {PORT_ATTEMPTS} tries.\n{error}")


# ---------------------------------------------------------------------------------------
# What is left behind
# ---------------------------------------------------------------------------------------


def leftover_server_processes() -> list[str]:
    """Servers or temporary directories started by this module that still exist.

    An empty list means everything was cleaned up. Each entry says what is left. (What a
    whole test run left, and course servers of any process, are the test run's business:
    :mod:`course.run_processes`.)
    """
    leftovers = []
    for record in STARTED:
        alive = group_members(record.pid)
        if alive:
            leftovers.append(f"{record.name}: process group {record.pid} still has processes {alive}")
    leftovers += [f"temporary directory {workdir} still exists" for workdir in WORKDIRS if workdir.exists()]
    return leftovers


@atexit.register
def _stop_leftovers_at_exit() -> None:
    """Last resort when a ``with`` never finished (e.g. ``__enter__`` called by hand)."""
    for record in STARTED:
        # Only servers whose leader we have not reaped yet: a reaped pid may by now
        # belong to an unrelated process, which we must never signal.
        if record.proc.poll() is None:
            stop_launched(record, grace=5.0)
    for workdir in WORKDIRS:
        shutil.rmtree(workdir, ignore_errors=True)
