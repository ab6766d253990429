"""Real child processes that skip the LangGraph import: forked from a server that did it once.

A fresh interpreter spends a second or more importing LangGraph before it runs a line of
a chapter's experiment. Chapter 10 starts three such children (two dispatchers and the
crash of exercise 10.4's check), so it starts them from a :mod:`multiprocessing` fork
server instead: a clean process (not a copy of the notebook's kernel, so no open SQLite
connection or socket is inherited) that imports :data:`PRELOAD` once and then forks each
child from itself. Every child is still a separate process with its own memory, and
``os._exit`` in it is a real crash.

* :func:`context` is that ``"forkserver"`` context (``"spawn"`` where the platform has no
  fork server: correct, only slower).
* :func:`warm_up` starts the fork server now, so that its imports overlap with other
  work; the server exits by itself when this process ends.
* :func:`start` / :func:`wait` run ``target(*args)`` in children (their output goes to a
  log file, never into a notebook cell) and collect exit codes.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from multiprocessing import forkserver
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

__all__ = ["PRELOAD", "context", "start", "wait", "warm_up"]

PRELOAD = ("helpers.ledger_service", "helpers.business_ids")


def context() -> BaseContext:
    """The fork-server context, preloading :data:`PRELOAD` (or ``spawn`` without a fork server)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():  # pragma: no cover - Windows
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(PRELOAD))
    return ctx


def warm_up() -> None:
    """Start the fork server (and its imports) in the background; returns at once."""
    if context().get_start_method() == "forkserver":
        forkserver.ensure_running()


def _with_output_to(log: str, target: Callable[..., Any], args: tuple[Any, ...]) -> None:
    # The fork server inherited this process's stdout and stderr; in a Jupyter kernel those
    # are captured into whichever cell happens to run, so a child writes to its log instead.
    with open(log, "ab", buffering=0) as file:
        os.dup2(file.fileno(), 1)
        os.dup2(file.fileno(), 2)
    target(*args)


def start(target: Callable[..., Any], *args: Any, log: str | Path = os.devnull) -> BaseProcess:
    """Run ``target(*args)`` in a new child process; its output goes to ``log``.

    The target must be importable (a module-level function).
    """
    process = context().Process(target=_with_output_to, args=(str(log), target, args))
    process.start()
    return process


def wait(processes: list[BaseProcess], timeout: float = 90.0) -> list[int]:
    """Wait for each process (killing any still alive after ``timeout``); their exit codes, in order."""
    codes = []
    try:
        for process in processes:
            process.join(timeout)
            if process.is_alive():
                raise TimeoutError(f"child process {process.pid} still running after {timeout} s")
            codes.append(process.exitcode)
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
                process.join()
    return codes
