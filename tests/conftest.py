"""Shared fixtures: paths of the course and loaded notebooks.

The session's own temp folder, run id and leftover check are the root ``conftest.py``'s
(:mod:`course.owned_test_run`), so that they also apply to a run of one notebook.
"""

import os
from pathlib import Path

import nbformat
import pytest

from course import layout

ROOT = layout.ROOT
SOLUTIONS = layout.chapters(layout.SOLUTIONS)
NOTEBOOKS = layout.chapters(layout.NOTEBOOKS)
# The browser test (tests/browser) needs Chromium and playwright: only `make test-browser` runs it.
BROWSER_TESTS_ENV = "COURSE_BROWSER_TESTS"
collect_ignore = [] if os.environ.get(BROWSER_TESTS_ENV) else ["browser"]


def read(path: Path):
    return nbformat.read(path, as_version=4)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
