"""helpers.kernel_forks: a real child forked from this very process, with the interface of a fresh one."""

from __future__ import annotations

import io
import os
import sys
import time
from pathlib import Path

import psutil
import pytest

from helpers import preloaded_processes
from helpers.kernel_forks import run_forked
from tests.helpers.test_preloaded_processes import WAYS, fail, leave, write_and_crash  # the same targets

SEEN_BY_THE_CHILD: list[str] = []
SCRIPT = """
import sys
print("argv:", sys.argv[1:], "| main:", __name__ == "__main__")
sys.exit(int(sys.argv[1]))
"""


def report_copy(path: str) -> None:
    """A target: write what this module's list held when the child started, then change the list."""
    Path(path).write_text(",".join(SEEN_BY_THE_CHILD), encoding="utf-8")
    SEEN_BY_THE_CHILD.append("added in the child")
    print("printed by the child")


@pytest.mark.parametrize("fork", WAYS)
def test_real_exit_codes_and_the_childs_output_in_its_log(fork: bool, tmp_path: Path) -> None:
    log = tmp_path / "child.log"
    assert run_forked(write_and_crash, str(tmp_path / "c.txt"), "crashed", 17, log=log, fork=fork) == 17
    assert (tmp_path / "c.txt").read_text() == "crashed"
    assert run_forked("time:sleep", 0, log=log, fork=fork) == 0
    assert run_forked(fail, "bad input", log=log, fork=fork) == 1
    assert [run_forked(leave, code, log=log, fork=fork) for code in (None, 5)] == [0, 5]
    assert run_forked(preloaded_processes.run_script, SCRIPT, "3", log=log, fork=fork) == 3
    text = log.read_text()
    assert "about to crash" in text and "ValueError: bad input" in text and "argv: ['3'] | main: True" in text


def test_the_child_starts_as_a_copy_and_changes_nothing_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not hasattr(os, "fork"):
        pytest.skip("no os.fork: the target runs in a fresh interpreter")
    this_module = sys.modules[report_copy.__module__]
    monkeypatch.setattr(this_module, "SEEN_BY_THE_CHILD", ["set before the fork"])
    captured = io.StringIO()  # as in a kernel: sys.stdout is not file descriptor 1
    monkeypatch.setattr(sys, "stdout", captured)
    log = tmp_path / "copy.log"
    assert run_forked(report_copy, str(tmp_path / "seen.txt"), log=log) == 0
    assert (tmp_path / "seen.txt").read_text() == "set before the fork"  # the child had this process's memory
    assert this_module.SEEN_BY_THE_CHILD == ["set before the fork"]  # and nothing came back
    assert log.read_text() == "printed by the child\n" and captured.getvalue() == ""


@pytest.mark.parametrize("fork", WAYS)
def test_a_child_past_its_timeout_is_killed_and_reaped(fork: bool) -> None:
    before, started = {p.pid for p in psutil.Process().children()}, time.monotonic()
    with pytest.raises(TimeoutError, match="killed"):
        run_forked("time:sleep", 60, timeout=1.0, fork=fork)
    assert time.monotonic() - started < 30
    assert {p.pid for p in psutil.Process().children()} <= before


def test_targets_must_be_importable_and_arguments_json() -> None:
    with pytest.raises(ValueError, match="not importable"):
        run_forked(lambda: None)
    with pytest.raises(TypeError):
        run_forked("time:sleep", Path("not json"))
