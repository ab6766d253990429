"""A real child process forked from the notebook's kernel itself: no second LangGraph import.

Chapters 01 and 07 each run one short child program: process A, which tells an assistant
the seat and exits (01), and process 1, which starts four approvals and exits (07);
exercise 10.4's check crashes one inside a node (:func:`helpers.business_ids.crash_inside_hold`). A
fresh interpreter, or a :class:`helpers.preloaded_processes.ProcessServer` started in the
setup cell, would first spend a second or more of CPU importing LangGraph; the kernel has
done that already, so :func:`run_forked` forks the kernel and the child starts in
milliseconds.

What the child is: a separate OS process that starts with a copy of the kernel's memory
(its modules and objects) and with the kernel's open file descriptors, which the two share
(and their offsets). Nothing it changes in its own memory reaches the kernel, and what it
holds there ends with it; what it writes to a file, or does through an inherited descriptor
or a shared mapping (SQLite's WAL index of a connection the kernel has open), does reach
it. IPython stops its history thread, which writes SQLite, before every fork
(``os.register_at_fork`` in ``IPython/core/history.py``) and restarts it at the next cell,
so no child starts with SQLite's locks held by that thread. It suits a target that opens
what it uses itself (a SQLite file by its path) and never uses the kernel's open
connections. The kernel's other threads do not exist in the child.

Chapter 06 forks its kernel too (:func:`helpers.booking_crashes.fork_child`), to hand the
child functions defined in the notebook. :func:`run_forked` takes importable targets with
JSON arguments instead, as :class:`~helpers.preloaded_processes.ProcessServer` does, so the
same call also works without ``os.fork`` (Windows): there the target runs in a fresh
interpreter, only slower.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .preloaded_processes import ProcessServer, run_target, target_name

__all__ = ["run_forked"]


def run_forked(target: str | Callable[..., Any], *args: Any, log: str | Path = os.devnull,
               timeout: float = 90.0, fork: bool | None = None) -> int:
    """Run ``target(*args)`` in a child forked from this process and wait for it; its exit code.

    ``target`` is ``"module:function"`` or a module-level function, ``args`` are JSON
    values. The child's stdin is empty; its stdout and stderr, ``sys.stdout`` and
    ``sys.stderr`` included (in a kernel they are the kernel's own streams), go to ``log``.
    It ends with ``os._exit`` and the codes of :func:`~helpers.preloaded_processes.run_target`
    (0 when ``target`` returns, 1 when it raises, the code of a ``sys.exit`` or of an
    ``os._exit`` in it), so it never runs this process's cleanup or returns into its code.
    After ``timeout`` seconds the child is killed and TimeoutError raised. ``fork=False``
    (the default without ``os.fork``) runs ``target`` in a fresh interpreter instead.
    """
    name, arguments = target_name(target), json.loads(json.dumps(list(args)))
    if not (hasattr(os, "fork") if fork is None else fork):
        with ProcessServer(fork=False) as fresh:
            return fresh.run(name, *arguments, log=log, timeout=timeout)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # nothing buffered before the fork is written twice
    pid = os.fork()
    if pid == 0:  # the child: run the target, then leave, whatever happens
        code = 1
        try:
            sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 - ended by os._exit
            sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
            code = run_target(name, arguments, str(log))  # points file descriptors 1 and 2 at the log first
        finally:
            os._exit(code)
    reaped, statuses = threading.Event(), []

    def reap() -> None:
        statuses.append(os.waitpid(pid, 0)[1])
        reaped.set()

    threading.Thread(target=reap, daemon=True, name=f"reap-{pid}").start()
    try:
        finished = reaped.wait(timeout)
    finally:
        if not reaped.is_set():  # timed out, or this process was interrupted while waiting
            os.kill(pid, signal.SIGKILL)
            reaped.wait()
    if not finished:
        raise TimeoutError(f"child process {pid} ({name}) still running after {timeout} s; killed")
    return os.waitstatus_to_exitcode(statuses[0])
