"""run_in_turns: children start together but act strictly in the order given."""

import time

import pytest

from helpers.processes import ChildProcessError
from helpers.worker_turns import run_in_turns

# Each child appends its name to a shared file once it is released; the file shows the order.
APPEND = """
import sys
path, name = sys.argv[1:]
sys.stdin.readline()                      # wait for the turn
with open(path, "a") as f:
    f.write(name + "\\n")
print(name, "done")
"""


def test_children_act_in_the_given_order(tmp_path):
    log = tmp_path / "order.txt"
    names = ["c", "a", "b", "d"]
    results = run_in_turns([(APPEND, log, n) for n in names])
    assert log.read_text().split() == names
    assert [r.stdout.strip() for r in results] == [f"{n} done" for n in names]
    assert all(r.returncode == 0 for r in results)


def test_children_start_together():
    # The second child starts while the first is still busy with its turn: their start-ups overlap.
    first = "import sys, time; sys.stdin.readline(); time.sleep(1.0); print(time.monotonic())"
    second = "import sys, time; print(time.monotonic()); sys.stdin.readline()"
    results = run_in_turns([(first,), (second,)])
    first_finished, second_started = float(results[0].stdout), float(results[1].stdout)
    assert second_started < first_finished


def test_a_failing_child_raises_and_leaves_no_children(tmp_path):
    fail = "import sys; sys.stdin.readline(); sys.exit('broken worker')"
    wait = "import sys; sys.stdin.readline(); print('never')"
    with pytest.raises(ChildProcessError, match="broken worker"):
        run_in_turns([(fail,), (wait,)])


def test_a_child_that_does_not_read_stdin_just_runs():
    results = run_in_turns([("print('hi')",)])
    assert results[0].stdout == "hi\n"


def test_timeout_kills_the_children():
    started = time.monotonic()
    with pytest.raises(Exception) as info:
        run_in_turns([("import time, sys; sys.stdin.readline(); time.sleep(60)",)], timeout=1)
    assert type(info.value).__name__ == "TimeoutExpired"
    assert time.monotonic() - started < 30
