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


@dataclass(frozen=True)
class ProcessResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()


class ChildProcessError(RuntimeError):
    """A child process failed when it was expected to succeed."""


def run_python(code: str, *args: str, cwd: str | Path | None = None, timeout: float = 60,
               expect_returncode: int | None = 0, env: dict[str, str] | None = None) -> ProcessResult:
    """Run ``code`` with this interpreter in a new process and wait for it.

    ``args`` become ``sys.argv[1:]``. The child's stdout and stderr are captured. When
    ``expect_returncode`` is not None and differs from the real one, raise with the
    child's stderr so the reason is visible in the notebook.
    """
    child_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=timeout, env=child_env)
    result = ProcessResult(done.returncode, done.stdout, done.stderr)
    if expect_returncode is not None and done.returncode != expect_returncode:
        tail = "\n".join(done.stderr.strip().splitlines()[-15:])
        raise ChildProcessError(f"child process exited with {done.returncode}, expected {expect_returncode}:\n{tail}")
    return result
