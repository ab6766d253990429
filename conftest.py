"""Test-session hooks for every path pytest collects (tests/, solutions/, notebooks/).

They live at the repository's root, not in tests/conftest.py, so that running nbval on a
single notebook (``pytest solutions/08_durability.ipynb``) gets what ``make test`` gets:
kernels over Unix sockets, a temp folder and run id of its own (:mod:`course.owned_test_run`),
the check for leftovers at the end, and the slowest-first order.
"""

import pytest

from course.owned_test_run import OwnedRun

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
    from course.forked_kernels import close_zygotes

    close_zygotes()  # in every process: this one's kernel zygotes would otherwise end only at its exit
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
SLOWEST_FIRST = ("14_persistent_service.ipynb",  # 45-70 under load (PostgreSQL and uvicorn start), both folders
                 "tests/course/test_grade_logic.py",  # 45 (one file at a time, mostly timeouts waited out)
                 "tests/course/test_grade_failures.py",  # 44
                 "tests/helpers/test_servers.py",  # 34
                 "tests/course/test_grade_chapters.py",  # 23
                 "tests/course/test_grade_batch.py",  # 17
                 "tests/helpers/test_durability_experiments.py",  # 14
                 "16_your_own_checkpointer.ipynb",  # 25-50 under load, in both folders (an Agent Server start)
                 "12_production_backends.ipynb", "13_agent_server.ipynb",  # 11-13 each, in both folders
                 "15_small_threads.ipynb",  # a PostgreSQL start in its last part, in both folders
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
