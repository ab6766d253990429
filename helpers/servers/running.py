"""What every course server shares: its description, ports, logs, and an owned temporary directory.

Each server gets a fresh temporary directory named ``lgcourse-server-<kind>-…``. It holds
an owner file (:data:`OWNER_FILE`, laid out like PostgreSQL's ``postmaster.pid``: one value
per line) that names the Python process that made it (PID, then its start time, so a
reused PID is not mistaken for it) and the run that owns it (the :data:`RUN_ENV`
environment variable, empty when unset: a test session sets it, and kernels, workers and
servers inherit it). The next start removes directories whose owner is gone.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

HOST = "127.0.0.1"
TEMP_PREFIX = "lgcourse-server-"
OWNER_FILE = "owner.pid"  # in each temporary directory: the process (and run) that made it
RUN_ENV = "LGCOURSE_RUN"  # set by a test session; inherited by its workers, kernels and servers
LOG_TAIL_LINES = 20
LOG_MARKER = "=== helpers.servers starting:"
POLL_INTERVAL = 0.05  # seconds between readiness checks inside a deadline loop
STOP_GRACE = 10.0  # seconds a server gets to shut down cleanly before SIGKILL
PORT_ATTEMPTS = 3  # fresh ports to try when an auto-picked port is taken meanwhile
INSTALL_HINT = "Install the course requirements: pip install -r requirements.txt"


class ServerStartError(RuntimeError):
    """A server did not start or did not become ready in time."""


class ServerNotInstalledError(ServerStartError):
    """The server's program or package is not installed; the message says how to install it."""


class PortInUseError(ServerStartError):
    """The requested port is already taken."""


class PortConflict(ServerStartError):
    """An auto-picked port was taken between picking and binding: try another one."""


@dataclass(frozen=True)
class RunningServer:
    """A started server: where to connect, and where its files and log are."""

    name: str
    url: str
    host: str
    port: int
    pid: int
    workdir: Path
    log_path: Path
    started_in: float  # seconds from entering the `with` to ready (PostgreSQL: initdb included)

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last ``lines`` lines of the server's log."""
        return log_tail(self.log_path, lines)


@dataclass(frozen=True)
class LaunchRecord:
    """A server process this module launched, kept to find (and stop) leftovers."""

    name: str
    proc: subprocess.Popen
    workdir: Path
    stop_signal: int
    watchdog: subprocess.Popen | None = None  # stops the server if this process dies first

    @property
    def pid(self) -> int:
        return self.proc.pid


STARTED: list[LaunchRecord] = []  # every launch, in order
WORKDIRS: list[Path] = []  # every temporary directory made, in order


# ---------------------------------------------------------------------------------------
# Ports and logs
# ---------------------------------------------------------------------------------------


def free_port(host: str = HOST) -> int:
    """A port that is free on ``host`` right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_is_free(port: int, host: str = HOST) -> bool:
    """True when nothing listens on ``host:port`` and a server could bind it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        if probe.connect_ex((host, port)) == 0:
            return False
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Servers set SO_REUSEADDR too, so a port in TIME_WAIT counts as free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def ports_to_try(port: int | None) -> list[int]:
    """The requested port (checked now, with a clear error), or a few auto-picked ones."""
    if port is None:
        return [free_port() for _ in range(PORT_ATTEMPTS)]
    if not port_is_free(port):
        raise PortInUseError(f"port {port} on {HOST} is already in use: stop what uses it, or pass port=None "
                             "to let the helper pick a free port")
    return [port]


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log file ('' when it does not exist yet)."""
    try:
        text = Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def log_mentions(log_path: Path, pattern: str) -> bool:
    """Does the log of the latest start attempt (after the last marker) match ``pattern``?"""
    try:
        text = log_path.read_text(errors="replace")
    except FileNotFoundError:
        return False
    return re.search(pattern, text.rpartition(LOG_MARKER)[2]) is not None


def with_log(message: str, log_path: Path) -> str:
    tail = log_tail(log_path)
    return f"{message}\nLast {LOG_TAIL_LINES} lines of {log_path}:\n{tail or '(empty log)'}"


# ---------------------------------------------------------------------------------------
# Owners and temporary directories
# ---------------------------------------------------------------------------------------


def owner_tag() -> dict[str, Any]:
    """Who owns what this process starts: its PID, its start time and the run it belongs to."""
    return {"pid": os.getpid(), "started": psutil.Process().create_time(), "run": os.environ.get(RUN_ENV)}


def write_owner(workdir: Path) -> None:
    """Write :func:`owner_tag` to ``workdir``'s owner file: PID, start time, run (one per line)."""
    owner = owner_tag()
    (Path(workdir) / OWNER_FILE).write_text(f"{owner['pid']}\n{owner['started']!r}\n{owner['run'] or ''}\n")


def read_owner(workdir: Path) -> dict[str, Any] | None:
    """The owner file of a server's temporary directory (None: not ours, or still being set up)."""
    try:
        lines = (Path(workdir) / OWNER_FILE).read_text().splitlines()
        return {"pid": int(lines[0]), "started": float(lines[1]) if len(lines) > 1 else None,
                "run": (lines[2] if len(lines) > 2 else "") or None}
    except (OSError, ValueError, IndexError):
        return None


def owner_alive(owner: dict[str, Any]) -> bool:
    """Is the process named in an owner file still the same, running process?"""
    try:
        started = psutil.Process(owner["pid"]).create_time()
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:  # someone else's process: assume it is the owner
        return True
    return abs(started - float(owner.get("started") or started)) < 1.0


def _sweep_stale_workdirs() -> None:
    """Remove temporary directories whose owner died without cleaning up.

    A killed Jupyter kernel runs no ``finally``; its server's watchdog stops the server
    and removes the directory, so this only catches what the watchdog could not (e.g. the
    whole machine or container was stopped). Directories of live owners (another
    notebook, a parallel test worker, another clone's kernel) are left alone.
    """
    for workdir in Path(tempfile.gettempdir()).glob(f"{TEMP_PREFIX}*"):
        owner = read_owner(workdir)
        if owner is not None and not owner_alive(owner):
            shutil.rmtree(workdir, ignore_errors=True)


@contextmanager
def temp_workdir(kind: str, run_as: pwd.struct_passwd | None = None) -> Iterator[Path]:
    """A fresh temporary directory with an owner file, removed on exit whatever happened inside."""
    _sweep_stale_workdirs()
    workdir = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{kind}-"))
    WORKDIRS.append(workdir)
    write_owner(workdir)
    try:
        if run_as is not None:
            os.chown(workdir, run_as.pw_uid, run_as.pw_gid)
        yield workdir
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
