"""Run Python code in a real, separate process.

Chapters about restarts and crashes must not fake them inside the notebook's kernel: a
child process has its own memory, and when it exits (or is killed) that memory is gone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

# The exit code of a child process that crashes on purpose (``os._exit(CRASH_EXIT_CODE)``: no
# cleanup, no finally), in every chapter that crashes one; a parent compares against it to tell
# the planned crash from a real failure. (Chapter 08 shows its own ``CRASH_EXIT_CODE = 17`` in
# a cell, saved as helpers.durability_experiments.CRASH_EXIT_CODE; a test keeps them equal.)
CRASH_EXIT_CODE = 17


@dataclass(frozen=True)
class ProcessResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()


class ChildProcessFailed(RuntimeError):
    """A child process failed when it was expected to succeed.

    Not named ``ChildProcessError``: that is a built-in (an OSError subclass for ECHILD), and
    shadowing it would make ``except ChildProcessError`` mean two things.
    """


def run_python(code: str, *args: object, cwd: str | Path | None = None, timeout: float = 60,
               expect_returncode: int | None = 0, env: dict[str, str] | None = None) -> ProcessResult:
    """Run ``code`` with this interpreter in a new process and wait for it.

    ``args`` become ``sys.argv[1:]``. The child's stdout and stderr are captured. When
    ``expect_returncode`` is not None and differs from the real one, raise with the
    child's stderr so the reason is visible in the notebook.
    """
    return run_pythons([(code, *args)], cwd=cwd, timeout=timeout, expect_returncode=expect_returncode, env=env)[0]


def run_pythons(jobs: list[tuple[object, ...]], *, cwd: str | Path | None = None, timeout: float = 60,
                expect_returncode: int | None = 0, env: dict[str, str] | None = None) -> list[ProcessResult]:
    """Run several ``(code, *args)`` jobs as concurrent processes; results in job order.

    Independent children overlap their interpreter start-up, which is most of their cost.
    """
    child_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(str(code)), *map(str, args)], cwd=cwd,
                              env=child_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for code, *args in jobs]
    results = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=timeout)
            results.append(ProcessResult(proc.returncode, out, err))
    finally:
        for proc in procs:  # on a timeout, never leave children behind
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for result in results:
        if expect_returncode is not None and result.returncode != expect_returncode:
            tail = "\n".join(result.stderr.strip().splitlines()[-15:])
            raise ChildProcessFailed(f"child process exited with {result.returncode}, "
                                    f"expected {expect_returncode}:\n{tail}")
    return results
