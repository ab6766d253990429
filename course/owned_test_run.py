"""A test run's own temp folder and run id (used by the repository's root ``conftest.py``).

A test run owns what it starts, and only that. Before the xdist workers start, the
controller makes a private temp folder and points ``TMPDIR`` at it, and sets
``LGCOURSE_RUN`` (:data:`helpers.servers.RUN_ENV`) to an id of its own. Workers, notebook
kernels, child processes and servers inherit both: every temporary file or directory the
run makes lands in that folder, and every process it starts carries the run's id. At
the end the run reports what is left in its folder and which of its processes still
live, then removes the folder: the machine's temp folder is left as it was found, and
another clone's or a learner's live servers neither fail nor slow down the run.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
import time
from pathlib import Path

import psutil

from helpers import servers

from .run_processes import processes_of_run

__all__ = ["PROCESS_GRACE", "PYTEST_OWN", "RUN_FOLDER_PREFIX", "OwnedRun", "own_resource_tracker"]

RUN_FOLDER_PREFIX = "lgcourse-run-"
PYTEST_OWN = "pytest-of-"  # pytest's tmp_path folders: pytest manages (and keeps) them
PROCESS_GRACE = 5.0  # seconds a just-stopped process of the run gets to disappear


def own_resource_tracker() -> frozenset[int]:
    """The PID of this process's multiprocessing resource tracker, if one runs (else empty).

    multiprocessing starts it on first use of a semaphore or shared memory, and it ends
    when this process does. In a run without xdist (``pytest tests/helpers/test_ledger.py``)
    this process is the controller, so the tracker is still alive at the check: not a leak.
    """
    trackers = set()
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            if "from multiprocessing.resource_tracker import main" in " ".join(child.cmdline()):
                trackers.add(child.pid)
    return frozenset(trackers)


class OwnedRun:
    """The temp folder and the run id of one test session (made in the controller)."""

    def __init__(self) -> None:
        self.run_id = f"{os.getpid()}-{secrets.token_hex(4)}"
        self.closed = False
        self.folder = Path(tempfile.mkdtemp(prefix=RUN_FOLDER_PREFIX))
        if os.geteuid() == 0:
            self.folder.chmod(0o711)  # PostgreSQL runs as 'nobody' and must reach its directory in here
        self.saved = {key: os.environ.get(key) for key in ("TMPDIR", servers.RUN_ENV)}
        os.environ["TMPDIR"] = str(self.folder)
        os.environ[servers.RUN_ENV] = self.run_id
        tempfile.tempdir = None  # forget the cached temp folder: the next lookup reads TMPDIR

    def leftovers(self, grace: float = PROCESS_GRACE) -> list[str]:
        """Entries the run left in its folder and processes of the run still alive after ``grace`` s."""
        left = [f"temporary {'directory' if p.is_dir() else 'file'} {p.name}"
                for p in sorted(self.folder.iterdir()) if not p.name.startswith(PYTEST_OWN)]
        deadline = time.monotonic() + grace
        own = own_resource_tracker()
        processes = processes_of_run(self.run_id, exclude=own)
        while processes and time.monotonic() < deadline:
            time.sleep(0.1)
            processes = processes_of_run(self.run_id, exclude=own)
        return left + processes

    def close(self) -> None:
        """Restore the environment and remove the folder; a second call does nothing."""
        if self.closed:
            return
        self.closed = True
        for key, value in self.saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        tempfile.tempdir = None
        shutil.rmtree(self.folder, ignore_errors=True)
