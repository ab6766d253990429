"""Fixtures for the browser test: `make lab` on a throw-away copy of the course, and headless Chromium.

Run with ``make test-browser`` (not part of ``make test``). Chromium is the system's
(Debian: ``apt-get install chromium``), driven by the ``playwright`` package from the
``browser`` extra; ``COURSE_CHROMIUM`` may name another binary.
"""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from course.lab_session import LabSession, lab_session

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# As the workplace's own probe runs it: no sandbox (CI runs as root), no GPU, and no
# background traffic to Google's services (the machine has no network for them).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
STEP_TIMEOUT_MS = 60_000  # any single wait: a page, a kernel, a cell's output
# What the test needs to see every cell: JupyterLab renders only the cells in view by
# default ("windowing"); and no pop-up asking about news in front of the notebook.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}


def pytest_configure(config) -> None:
    # A terminated test run (a CI time limit, `timeout`) still stops JupyterLab and Chromium:
    # SIGTERM becomes a KeyboardInterrupt, on which pytest runs every fixture's teardown.
    signal.signal(signal.SIGTERM, signal.default_int_handler)


def chromium_path() -> str:
    found = os.environ.get("COURSE_CHROMIUM") or next(filter(None, map(shutil.which, CHROMIUM_NAMES)), None)
    if not found:
        pytest.fail("no Chromium found: install it (Debian/Ubuntu: apt-get install chromium) or set COURSE_CHROMIUM "
                    "to a Chromium or Chrome binary", pytrace=False)
    return found


@pytest.fixture(scope="session")
def lab() -> Iterator[LabSession]:
    with lab_session(settings=LAB_SETTINGS) as session:
        yield session


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def new_page(browser: Browser) -> Iterator:
    """Pages of a fresh browser context (closed after the module)."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(STEP_TIMEOUT_MS)

    def make() -> Page:
        return context.new_page()

    try:
        yield make
    finally:
        context.close()
