"""Targets that test_preloaded_processes.py runs in real children.

In a module of their own, which imports only the standard library: a child imports its
target's module, and the test module would make every child import pytest and psutil
(about 0.3 CPU s each). ``preloaded_here`` needs this module not to import ``email``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def write_and_crash(path: str, text: str, code: int) -> None:
    """A target: print, write a file, then end the process the hard way."""
    print("about to crash")
    Path(path).write_text(text, encoding="utf-8")
    os._exit(code)


def fail(message: str) -> None:
    raise ValueError(message)


def leave(code: object) -> None:
    sys.exit(code)


def preloaded_here() -> None:
    """Exit 0 when email.mime.text (the servers' preload) is already imported, 1 when it is not."""
    os._exit(0 if "email.mime.text" in sys.modules else 1)
