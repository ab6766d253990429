"""`make lab` as a learner starts it, on a throw-away copy of the course, for the browser test.

    with lab_session() as lab:        # copies the course, runs `make lab` on a free loopback port
        page.goto(lab.url)            # http://127.0.0.1:PORT/?token=...

The copy lives in a temporary folder (notebooks can be edited, run and even saved there;
the committed ones are never touched) and uses this course's ``.venv``, whose helpers
package points back here. JupyterLab gets a private settings and workspaces folder, so a
maintainer's own layout cannot change what the test sees. On the way out every process
the session started is stopped by PID (JupyterLab with SIGTERM, which shuts its kernels
down; SIGKILL for anything left after a grace period), and the folder is removed. If the
test process itself is killed, a watchdog (:mod:`helpers.servers.watchdog`) does both.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil

from helpers.servers import RUN_ENV
from helpers.servers.lifecycle import start_watchdog

from .layout import ROOT
from .run_processes import run_processes

HOST = "127.0.0.1"
NOT_COPIED = {".venv", ".git", "__pycache__", "build", "drift-report", ".ipynb_checkpoints", ".hypothesis"}
STOP_GRACE = 20.0  # seconds JupyterLab gets to shut its kernels down before SIGKILL


class LabStartError(RuntimeError):
    """JupyterLab did not start; the message carries the end of its log."""


@dataclass(frozen=True)
class LabSession:
    """A running `make lab` on a copy of the course."""

    base_url: str  # http://127.0.0.1:PORT
    token: str
    copy: Path  # the course copy JupyterLab is rooted at
    pid: int  # the `make` process
    log_path: Path

    @property
    def url(self) -> str:
        """What a learner opens: the server's root, which redirects to the default page."""
        return f"{self.base_url}/?token={self.token}"

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def copy_course(source: Path, target: Path) -> Path:
    """Copy the course (not its virtualenv, git data or caches), keeping file times.

    Kept times matter: make compares them, and a copied requirements.txt that looked
    newer than the virtualenv would make `make lab` rebuild it.
    """
    shutil.copytree(source, target, symlinks=True,
                    ignore=lambda folder, names: [n for n in names if n in NOT_COPIED or n.endswith(".egg-info")])
    return target


def make_lab_command(copy: Path, venv: Path, port: int) -> list[str]:
    options = f"--no-browser --ServerApp.ip={HOST} --ServerApp.port_retries=0"
    return ["make", "-C", str(copy), "lab", f"PORT={port}", f"VENV={venv}", f"LAB_OPTIONS={options}"]


def _assert_venv_is_ready(copy: Path, venv: Path) -> None:
    """Refuse to start when make would (re)install: that would point .venv at the copy."""
    plan = subprocess.run(make_lab_command(copy, venv, 0)[:4] + ["-n", f"VENV={venv}"], capture_output=True,
                          text=True, check=False)
    if "pip install" in plan.stdout:
        raise LabStartError(f"{venv} is not up to date: run `make lab` or `make test` in {ROOT} first")


def _api_ready(base_url: str, token: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
    try:
        with opener.open(f"{base_url}/api/status?token={token}", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def stop_processes(processes: list[psutil.Process], first: int = signal.SIGTERM, grace: float = STOP_GRACE) -> None:
    """Signal each process (``first``, then SIGKILL after ``grace``) and wait until all are gone."""
    for sig in (first, signal.SIGKILL):
        alive = [p for p in processes if p.is_running()]  # is_running also guards against a reused PID
        for proc in alive:
            try:
                proc.send_signal(sig)
            except psutil.NoSuchProcess:
                pass
        _, alive = psutil.wait_procs(alive, timeout=grace)
        if not alive:
            return


def write_lab_settings(settings_dir: Path, settings: Mapping[str, Mapping[str, object]]) -> None:
    """JupyterLab user settings, e.g. ``{"@jupyterlab/notebook-extension:tracker": {...}}``."""
    for plugin, values in settings.items():
        package, _, name = plugin.partition(":")
        path = settings_dir / package / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


@contextmanager
def lab_session(source: Path = ROOT, settings: Mapping[str, Mapping[str, object]] | None = None,
                startup_timeout: float = 120.0) -> Iterator[LabSession]:
    """Run `make lab` on a copy of ``source`` until the ``with`` block ends (see the module docstring).

    ``settings``: JupyterLab user settings by plugin id, written to the session's private
    settings folder (the defaults otherwise).
    """
    venv = (source / ".venv").resolve()
    folder = Path(tempfile.mkdtemp(prefix="lgcourse-lab-"))
    try:
        copy = copy_course(source, folder / "course")
        write_lab_settings(folder / "lab-settings", settings or {})
        _assert_venv_is_ready(copy, venv)
        port, token, run = free_port(), secrets.token_hex(16), f"lab-{secrets.token_hex(6)}"
        env = {**os.environ, "JUPYTER_TOKEN": token, RUN_ENV: run,  # every process it starts carries the run id
               "JUPYTERLAB_SETTINGS_DIR": str(folder / "lab-settings"),
               "JUPYTERLAB_WORKSPACES_DIR": str(folder / "lab-workspaces")}
        log_path = folder / "lab.log"
        with open(log_path, "wb") as log:
            # A process group of its own (a Ctrl-C meant for the test does not reach it), with
            # a watchdog that stops it and removes the folder should this process be killed.
            make = subprocess.Popen(make_lab_command(copy, venv, port), stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, env=env, process_group=0)
        watchdog = start_watchdog(make.pid, signal.SIGTERM, folder)
        session = LabSession(f"http://{HOST}:{port}", token, copy, make.pid, log_path)
        started: list[psutil.Process] = [psutil.Process(make.pid)]
        try:
            deadline = time.monotonic() + startup_timeout
            while not _api_ready(session.base_url, token):
                if make.poll() is not None or time.monotonic() > deadline:
                    raise LabStartError(f"`make lab` did not answer on {session.base_url} "
                                        f"(exit code {make.poll()}):\n{session.log_tail()}")
                time.sleep(0.2)
            yield session
        finally:
            # JupyterLab first: on SIGTERM it shuts its kernels down; then make, then stragglers.
            started += psutil.Process(make.pid).children(recursive=True) if make.poll() is None else []
            jupyter = [p for p in started[1:] if "jupyter" in " ".join(_cmdline(p))]
            stop_processes(jupyter)
            stop_processes(started)
            make.wait()
            stop_processes(run_processes(run), first=signal.SIGKILL)  # orphans (e.g. of a restarted kernel)
            if watchdog is not None:
                watchdog.kill()
                watchdog.wait()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []
