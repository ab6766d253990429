"""Shared fixtures: paths of the course and loaded notebooks."""

from pathlib import Path

import nbformat
import pytest

from course import layout

ROOT = layout.ROOT
SOLUTIONS = layout.chapters(layout.SOLUTIONS)
NOTEBOOKS = layout.chapters(layout.NOTEBOOKS)


def read(path: Path):
    return nbformat.read(path, as_version=4)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


def pytest_sessionfinish(session, exitstatus):
    """After the whole run (not in xdist workers): no course server or temp dir is left.

    Notebook kernels and test workers start PostgreSQL and Agent Servers; each must stop
    its own, also when a cell or test failed. This turns a leak into a failed run.
    """
    if hasattr(session.config, "workerinput"):
        return
    from helpers.servers import stray_servers_on_this_machine

    stray = stray_servers_on_this_machine()
    if stray:
        print("\nLEFT BEHIND after the test run:\n  " + "\n  ".join(stray))
        session.exitstatus = 1


# Longest scopes first: xdist's loadscope hands out modules and notebooks in collection
# order, so a long module collected late would run alone at the end of the suite.
SLOWEST_FIRST = ("tests/course/test_grade.py", "tests/helpers/test_servers.py", "12_agent_server.ipynb",
                 "11_production_backends.ipynb", "tests/helpers/test_multitask.py")


def pytest_collection_modifyitems(session, config, items):
    def rank(item):
        path = item.nodeid.split("::", 1)[0]
        return next((i for i, slow in enumerate(SLOWEST_FIRST) if path.endswith(slow)), len(SLOWEST_FIRST))
    items.sort(key=rank)  # stable: the order inside a module or notebook is kept
