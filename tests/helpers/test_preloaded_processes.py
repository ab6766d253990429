"""helpers.preloaded_processes: a server that imports once and forks real children on request."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from helpers import preloaded_processes
from helpers.preloaded_processes import ProcessServer
from tests.helpers.preloaded_targets import fail, leave, preloaded_here, write_and_crash

WAYS = [pytest.param(True, id="forked", marks=pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork")),
        pytest.param(False, id="fresh-interpreter")]


@pytest.fixture(params=WAYS)
def server(request, tmp_path: Path):
    with ProcessServer(["email.mime.text"], log=tmp_path / "server.log", fork=request.param) as made:
        yield made


def test_children_run_in_parallel_and_report_real_exit_codes(server: ProcessServer, tmp_path: Path) -> None:
    children = [server.start(write_and_crash, str(tmp_path / f"{n}.txt"), f"child {n}", code, log=tmp_path / "c.log")
                for n, code in enumerate((17, 0, 3))]
    assert len({c.pid for c in children} | {os.getpid()}) == 4  # separate processes
    assert server.wait(children) == [17, 0, 3]
    assert [(tmp_path / f"{n}.txt").read_text() for n in range(3)] == ["child 0", "child 1", "child 2"]
    assert (tmp_path / "c.log").read_text().count("about to crash") == 3  # printed before os._exit: in the log


def test_wait_any_returns_a_child_that_ended_and_kills_none(server: ProcessServer, tmp_path: Path) -> None:
    slow = server.start("time:sleep", 30)
    quick = server.start(write_and_crash, str(tmp_path / "q.txt"), "quick", 5)
    if server.forks:  # the server reports whichever child ends first
        assert server.wait_any([slow, quick]) == quick
        with pytest.raises(TimeoutError):
            server.wait_any([slow], timeout=0.2)
        assert psutil.pid_exists(slow.pid)  # a timeout kills nothing
    else:  # fresh interpreters: the first in the list
        assert server.wait_any([quick, slow]) == quick
    assert server.wait([quick]) == [5]
    with pytest.raises(ValueError):
        server.wait_any([])


def test_a_return_exits_0_an_exception_1_and_sys_exit_its_code(server: ProcessServer, tmp_path: Path) -> None:
    log = tmp_path / "out.log"
    assert server.run("time:sleep", 0, log=log) == 0
    assert server.run(fail, "bad input", log=log) == 1
    assert "ValueError: bad input" in log.read_text()  # the traceback is in the child's log
    assert [server.run(leave, code, log=log) for code in (None, 5, "why")] == [0, 5, 1]
    assert log.read_text().rstrip().endswith("why")


def test_the_preloaded_modules_are_there_when_forked(tmp_path: Path) -> None:
    if not hasattr(os, "fork"):
        pytest.skip("no os.fork: targets run in fresh interpreters")
    with ProcessServer(["email.mime.text"]) as warm, ProcessServer([]) as cold:
        assert (warm.run(preloaded_here), cold.run(preloaded_here)) == (0, 1)


SCRIPT = """
import os, sys
print("argv:", sys.argv[1:], "| main:", __name__ == "__main__", "| env:", os.environ.get("COURSE_TEST_SETTING"))
sys.exit(int(sys.argv[1]))
"""


def test_run_script_runs_source_like_python_c(server: ProcessServer, tmp_path: Path) -> None:
    log = tmp_path / "script.log"
    assert server.run(preloaded_processes.run_script, SCRIPT, "0", "two", log=log) == 0
    assert server.run("helpers.preloaded_processes:run_script", SCRIPT, "3", log=log) == 3
    assert log.read_text().splitlines() == ["argv: ['0', 'two'] | main: True | env: None",
                                            "argv: ['3'] | main: True | env: None"]


@pytest.mark.parametrize("fork", WAYS)
def test_env_is_set_before_the_imports_and_inherited_by_every_child(fork: bool, tmp_path: Path) -> None:
    log = tmp_path / "env.log"
    with ProcessServer(["email.mime.text"], fork=fork, env={"COURSE_TEST_SETTING": "on"}) as made:
        assert made.run(preloaded_processes.run_script, SCRIPT, "0", log=log) == 0
        with preloaded_processes.server_for(["email.mime.text"]) as lent:
            assert lent is not made  # a server with its own env is never lent
    assert "env: on" in log.read_text()
    assert "COURSE_TEST_SETTING" not in os.environ  # only the server's environment had it


def test_a_timeout_kills_the_children_still_running(server: ProcessServer) -> None:
    quick, slow = server.start("time:sleep", 0), server.start("time:sleep", 60)
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=str(slow.pid)):
        server.wait([quick, slow], timeout=1.0)
    assert time.monotonic() - started < 30
    assert not psutil.pid_exists(slow.pid) or psutil.Process(slow.pid).status() == psutil.STATUS_ZOMBIE
    assert server.run("time:sleep", 0) == 0  # the server still works


def test_targets_must_be_importable_and_arguments_json(server: ProcessServer) -> None:
    with pytest.raises(ValueError, match="not importable"):
        server.start(lambda: None)
    with pytest.raises(ValueError, match="module:function"):
        server.start("time.sleep")
    with pytest.raises(TypeError):
        server.start("time:sleep", Path("not json"))


def test_close_ends_the_server_and_kills_children_left_running(server: ProcessServer) -> None:
    slow = server.start("time:sleep", 60)
    assert server.close() == 0 and not server.is_open
    assert not psutil.pid_exists(slow.pid) or psutil.Process(slow.pid).status() == psutil.STATUS_ZOMBIE
    assert server.close() == 0  # twice is fine
    with pytest.raises(RuntimeError, match="closed"):
        server.start("time:sleep", 0)


def test_a_forgotten_server_ends_when_its_input_closes() -> None:
    made = ProcessServer(["email.mime.text"], fork=True) if hasattr(os, "fork") else None
    if made is None:
        pytest.skip("no server process without os.fork")
    process = psutil.Process(made.process.pid)
    del made  # e.g. a setup cell ran twice; a killed kernel closes the pipe the same way
    gc.collect()
    assert process.wait(timeout=30) == 0


def test_a_failing_preload_is_reported() -> None:
    if not hasattr(os, "fork"):
        pytest.skip("no server process without os.fork")
    with ProcessServer(["no_such_module_here"]) as broken, pytest.raises(RuntimeError, match="no_such_module_here"):
        broken.run("time:sleep", 0)


def test_server_for_lends_an_open_server_or_makes_one_for_the_block() -> None:
    with ProcessServer(["email.mime.text", "json"]) as chapter:
        with preloaded_processes.server_for(["json"]) as lent:
            assert lent is chapter
        assert chapter.is_open  # a lent server stays open
        with preloaded_processes.server_for(["csv"]) as own:
            assert own is not chapter and own.preload == ("csv",)
        assert not own.is_open  # a server made for the block is closed after it


def test_nothing_is_written_to_the_temp_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    with ProcessServer(["email.mime.text"]) as made:
        assert made.wait([made.start("time:sleep", 0.05) for _ in range(3)]) == [0, 0, 0]
    assert list(temp.iterdir()) == []


OWNER = """
import sys
from helpers.preloaded_processes import ProcessServer
server = ProcessServer(["email.mime.text"])
child = server.start("time:sleep", 60)
print(server.process.pid, child.pid, flush=True)
sys.stdin.read()  # until the test kills this process
"""


def test_a_killed_owner_leaves_neither_the_server_nor_its_children_running() -> None:
    if not hasattr(os, "fork"):
        pytest.skip("no server process without os.fork")
    owner = psutil.Popen([sys.executable, "-c", OWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        server_pid, child_pid = map(int, owner.stdout.readline().split())
        server, child = psutil.Process(server_pid), psutil.Process(child_pid)
        owner.kill()  # like nbval killing a kernel: no cleanup runs in the owner
        owner.wait(30)
        gone, alive = psutil.wait_procs([server, child], timeout=30)
        assert not alive
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        owner.stdin.close()
        owner.stdout.close()
