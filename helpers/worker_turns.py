"""Run several real worker processes that take turns, without paying their start-up in turn.

Chapter 11 shows two worker processes continuing one conversation through a shared
PostgreSQL server: worker A handles one message, then worker B the next one. Starting
them one after the other would cost two interpreter start-ups in a row; starting them
together and letting them race would make the order (and the output) random.

:func:`run_in_turns` does both right: it starts every child at once (imports and
connections overlap), and each child's code calls ``sys.stdin.readline()`` where it
must wait for its turn. The parent writes one line to the first child's stdin, waits
until that child has exited, then lets the next one go. The order is decided here,
by the parent, never by timing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from .processes import ChildProcessError, ProcessResult

GO = "go\n"


def run_in_turns(jobs: list[tuple[object, ...]], *, cwd: str | Path | None = None, timeout: float = 60,
                 env: dict[str, str] | None = None) -> list[ProcessResult]:
    """Start all ``(code, *args)`` jobs now; release them one at a time, in order.

    Each job's code should block on ``sys.stdin.readline()`` before its turn (a job
    that does not read stdin simply runs at once). Returns one :class:`ProcessResult`
    per job, in job order. A child that exits with a non-zero code raises
    :class:`~helpers.processes.ChildProcessError` with its stderr; every child is
    killed on the way out if something went wrong.
    """
    child_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(str(code)), *map(str, args)], cwd=cwd,
                              env=child_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for code, *args in jobs]
    results: list[ProcessResult] = []
    try:
        for proc in procs:
            out, err = proc.communicate(GO, timeout=timeout)  # its turn: one line on stdin, then wait for exit
            results.append(ProcessResult(proc.returncode, out, err))
            if proc.returncode != 0:
                tail = "\n".join(err.strip().splitlines()[-15:])
                raise ChildProcessError(f"worker {len(results)} exited with {proc.returncode}:\n{tail}")
    finally:
        for proc in procs:  # on an error or a timeout, never leave children behind
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None and not stream.closed:
                    stream.close()
    return results
