"""Shared fixtures: paths of the course and loaded notebooks; the test run's own temp folder.

A test run owns what it starts, and only that. Before the xdist workers start, the
controller makes a private temp folder and points ``TMPDIR`` at it, and sets
``LGCOURSE_RUN`` (:data:`helpers.servers.RUN_ENV`) to an id of its own. Workers, notebook
kernels, child processes and servers inherit both: every temporary file or directory the
run makes lands in that folder, and every process it starts carries the run's id. At
the end the run reports what is left in its folder and which of its processes still
live, then removes the folder: the machine's temp folder is left as it was found, and
another clone's or a learner's live servers neither fail nor slow down the run.
"""

import os
import secrets
import shutil
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from course import layout
from helpers import servers

ROOT = layout.ROOT
SOLUTIONS = layout.chapters(layout.SOLUTIONS)
NOTEBOOKS = layout.chapters(layout.NOTEBOOKS)
RUN_FOLDER_PREFIX = "lgcourse-run-"
PYTEST_OWN = "pytest-of-"  # pytest's tmp_path folders: pytest manages (and keeps) them
PROCESS_GRACE = 5.0  # seconds a just-stopped process of the run gets to disappear
# The browser test (tests/browser) needs Chromium and playwright: only `make test-browser` runs it.
BROWSER_TESTS_ENV = "COURSE_BROWSER_TESTS"
collect_ignore = [] if os.environ.get(BROWSER_TESTS_ENV) else ["browser"]


def read(path: Path):
    return nbformat.read(path, as_version=4)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


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
        processes = servers.processes_of_run(self.run_id)
        while processes and time.monotonic() < deadline:
            time.sleep(0.1)
            processes = servers.processes_of_run(self.run_id)
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


_RUN = pytest.StashKey[OwnedRun]()


def pytest_configure(config):
    """In the controller (or a run without xdist), before any worker starts: the run's folder and id.

    In every process: nbval's kernels talk over Unix sockets. Over TCP a kernel binds
    ports that were free a moment earlier; on a busy machine (another clone's tests,
    a learner's lab) another process can take one first, and the kernel dies at start.
    """
    import nbval.kernel

    from course.jupyter_kernels import IpcBlockingKernelManager

    nbval.kernel.KernelManager = IpcBlockingKernelManager  # nbval builds its kernels with this name
    if not hasattr(config, "workerinput"):
        config.stash[_RUN] = OwnedRun()


@pytest.hookimpl(trylast=True)  # after xdist has stopped its workers
def pytest_sessionfinish(session, exitstatus):
    """After the whole run: nothing the run started is left, in its temp folder or as a process.

    Notebook kernels and test workers start PostgreSQL and Agent Servers and make
    temporary directories; each must remove its own, also when a cell or test failed.
    This turns a leak into a failed run. Only this run's things count.
    """
    run = session.config.stash.get(_RUN, None)
    if run is None:
        return
    try:
        left = run.leftovers()
    finally:
        run.close()
    if left:
        print(f"\nLEFT BEHIND by this test run (removed now; run id {run.run_id}):\n  " + "\n  ".join(left))
        session.exitstatus = 1


def pytest_unconfigure(config):
    """Also for a run that never had a session (``pytest --help``, a usage error): no folder stays."""
    run = config.stash.get(_RUN, None)
    if run is not None:
        run.close()


# Longest scopes first (measured: seconds of one full `make test`, 3 workers, 2 cores, load
# ~4 from other work): xdist's loadscope hands out modules and notebooks in collection order
# (`--no-loadscope-reorder`; its default order is by number of tests), so a long module
# handed out late would run alone at the end.
SLOWEST_FIRST = ("tests/course/test_grade_failures.py",  # 44
                 "tests/helpers/test_servers.py",  # 34
                 "tests/course/test_grade_logic.py",  # 28
                 "tests/course/test_grade_chapters.py",  # 23
                 "tests/course/test_grade_batch.py",  # 17
                 "tests/helpers/test_durability_experiments.py",  # 14
                 "11_production_backends.ipynb", "12_agent_server.ipynb",  # 11-13 each, in both folders
                 "tests/helpers/test_ledger_service.py",  # 13
                 "tests/helpers/test_multitask.py",  # 12.5
                 "tests/checks/test_exercises.py",  # 12
                 "tests/helpers/test_preloaded_processes.py",  # 11
                 "tests/course/test_progress.py", "08_durability.ipynb")  # 8-9


def pytest_collection_modifyitems(session, config, items):
    def rank(item):
        path = item.nodeid.split("::", 1)[0]
        return next((i for i, slow in enumerate(SLOWEST_FIRST) if path.endswith(slow)), len(SLOWEST_FIRST))
    items.sort(key=rank)  # stable: the order inside a module or notebook is kept
