"""A real child process forked from the notebook's kernel itself: no second LangGraph import.

Chapters 01 and 07 each run one short child program: process A, which tells an assistant
the seat and exits (01), and process 1, which starts four approvals and exits (07). A
fresh interpreter, or a :class:`helpers.preloaded_processes.ProcessServer` started in the
setup cell, would first spend a second or more of CPU importing LangGraph; the kernel has
done that already, so :func:`run_forked` forks the kernel and the child starts in
milliseconds.

What the child is: a separate OS process that starts with a copy of the kernel's memory
(its modules and objects) and with the kernel's open file descriptors, which the two share
(and their offsets). Nothing it changes in memory reaches the kernel, and what it holds in
memory ends with it; what it writes to a file, or does through an inherited descriptor,
does reach it. It suits a target that opens what it uses itself (a SQLite file by its
path) and never uses the kernel's open connections. The kernel's other threads do not
exist in the child.

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
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from .preloaded_processes import ProcessServer, run_target, target_name

__all__ = ["fork_quietly", "run_forked"]


@contextmanager
def fork_quietly() -> Iterator[None]:
    """Around an ``os.fork`` in a kernel: IPython's history thread is not inside SQLite meanwhile.

    The kernel's history thread writes each cell's input to its SQLite file while the cell
    starts. A fork that caught it inside SQLite would copy SQLite's internal locks held, and
    a child that then opened a SQLite file could wait on them forever. The thread writes only
    while it holds the history cache locks, so holding them across the fork is enough.
    Outside IPython (a plain script, a test) there is nothing to hold.
    """
    with ExitStack() as held:
        shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
        history = getattr(shell, "history_manager", None)
        for name in ("db_input_cache_lock", "db_output_cache_lock"):
            lock = getattr(history, name, None)
            if lock is not None:
                held.enter_context(lock)
        yield


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
    with fork_quietly():
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
