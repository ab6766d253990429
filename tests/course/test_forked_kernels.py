"""Kernels forked from a zygote (course.forked_kernels): as fresh as a new interpreter, and faster.

Each test starts real kernels with the course's kernel manager, as nbval, the build and the
grader do. The zygote of this process is shared by the tests (that is the point of it), so
the leak test checks what one notebook leaves for the next one forked from the same zygote.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from course import forked_kernels, grade
from course.forked_kernels import SWITCH, Zygote
from course.jupyter_kernels import IpcBlockingKernelManager
from tests.course.grading_submissions import RIGHT, learner_00, with_answer, write

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="kernels are forked only where os.fork exists")

TIMEOUT = 120  # seconds; a loaded machine needs many


@pytest.fixture(autouse=True)
def forking_switched_on(monkeypatch):
    """Forked kernels are the default (COURSE_FORK_KERNELS=0 turns them off); these tests are about them."""
    monkeypatch.setenv(SWITCH, "1")


def start(tmp_path: Path, fork: bool = True, **launch) -> IpcBlockingKernelManager:
    manager = IpcBlockingKernelManager(kernel_name="python3")
    manager.fork_kernels = fork
    manager.start_kernel(cwd=str(tmp_path), stderr=subprocess.DEVNULL, **launch)
    manager.test_client = manager.client()
    manager.test_client.start_channels()
    manager.test_client.wait_for_ready(timeout=TIMEOUT)
    return manager


def stop(manager: IpcBlockingKernelManager) -> None:
    manager.test_client.stop_channels()
    manager.shutdown_kernel(now=True)


def run(manager: IpcBlockingKernelManager, code: str) -> tuple[str, str]:
    """What ``code`` printed in the kernel, and the name of the error it raised ("" if none)."""
    printed = []

    def keep(msg):
        if msg["msg_type"] == "stream":
            printed.append(msg["content"]["text"])

    reply = manager.test_client.execute_interactive(textwrap.dedent(code), output_hook=keep, timeout=TIMEOUT)
    return "".join(printed), reply["content"].get("ename", "")


def gone(pid: int, within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def forked(manager: IpcBlockingKernelManager) -> bool:
    return getattr(manager.provisioner, "forked", False)  # jupyter_client's LocalProvisioner: never


def zygote_of(manager: IpcBlockingKernelManager) -> psutil.Process:
    return psutil.Process(manager.provisioner.pid).parent()


PROBE = """
import json, os, signal, stat, sys, tempfile, threading
handlers = {s.name: str(signal.getsignal(s)) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD,
                                                       signal.SIGPIPE, signal.SIGHUP, signal.SIGUSR1)}
print(json.dumps({
    "path": sys.path, "argv": sys.argv, "orig_argv": sys.orig_argv, "cwd": os.getcwd(),
    "environ": dict(os.environ), "flags": list(sys.flags), "temp": tempfile.gettempdir(),
    "names": sorted(n for n in globals() if not n.startswith("_")), "handlers": handlers,
    "leads_its_group": os.getpgid(0) == os.getpid() == os.getsid(0),
    "stdio": [stat.S_IFMT(os.fstat(fd).st_mode) for fd in (0, 1, 2)], "main": sys.modules["__main__"].__name__,
    "threads": sorted(t.name for t in threading.enumerate()), "kernel": type(get_ipython().kernel).__name__,
    "line_buffered": sys.__stdout__.line_buffering,
}))
"""


def test_a_kernel_is_forked_from_a_zygote_that_runs_no_thread(tmp_path):
    manager = start(tmp_path)
    try:
        assert forked(manager)
        zygote = zygote_of(manager)
        assert "_course_zygote" in " ".join(zygote.cmdline())
        assert zygote.num_threads() == 1  # native threads too: forking it is safe
        assert os.getpgid(manager.provisioner.pid) == manager.provisioner.pid  # its own group, for interrupts
    finally:
        stop(manager)


def test_a_forked_kernel_is_set_up_as_a_fresh_interpreter_would_be(tmp_path):
    seen = {}
    for fork in (True, False):
        manager = start(tmp_path, fork=fork)
        try:
            assert forked(manager) is fork
            out = run(manager, PROBE)[0]
            for name in {os.path.realpath(manager.connection_file), manager.connection_file}:
                out = out.replace(name, "CONNECTION-FILE")  # each manager writes its own
            seen[fork] = json.loads(out)
        finally:
            stop(manager)
    assert seen[True] == seen[False]
    assert seen[True]["environ"]["JPY_PARENT_PID"] == str(os.getpid())  # as jupyter_client sets it


def test_nothing_leaks_between_two_notebooks_forked_from_one_zygote(tmp_path):
    """The first notebook changes everything it can reach; the second, forked while the first
    still runs, and a third after it ended, see none of it."""
    secret = tmp_path / "secret.txt"
    secret.write_text("only the first notebook opened this")
    first = start(tmp_path)
    zygote = zygote_of(first)
    zygote_fds = zygote.num_fds()
    try:
        out, error = run(first, f"""
            import json, os, sys, types
            import langgraph.graph
            langgraph.graph.LEAKED = "a global of the first notebook"           # a module-level global
            langgraph.graph.StateGraph.compile = lambda self, *a, **k: "patched"   # a patched module
            os.environ["LEAKED_VARIABLE"] = "1"                                     # an environment variable
            sys.modules["leaked_module"] = types.ModuleType("leaked_module")        # an imported module
            kept = os.open({str(secret)!r}, os.O_RDONLY)                            # a file descriptor
            os.set_inheritable(kept, True)
            print(json.dumps([os.fstat(kept).st_dev, os.fstat(kept).st_ino]))
        """)
        assert not error
        secret_file = json.loads(out)
        check = """
            import json, os, sys
            import langgraph.graph
            def open_files():
                found = []
                for fd in range(1024):
                    try:
                        found.append([os.fstat(fd).st_dev, os.fstat(fd).st_ino])
                    except OSError:
                        pass
                return found
            print(json.dumps({"global": hasattr(langgraph.graph, "LEAKED"),
                              "patched": langgraph.graph.StateGraph.compile.__qualname__,
                              "variable": "LEAKED_VARIABLE" in os.environ, "module": "leaked_module" in sys.modules,
                              "files": open_files()}))
        """
        second = start(tmp_path)
        try:
            assert zygote_of(second).pid == zygote.pid  # the same zygote, a new process
            seen_while_first_runs = json.loads(run(second, check)[0])
        finally:
            stop(second)
    finally:
        stop(first)
    third = start(tmp_path)
    try:
        seen_after_first_ended = json.loads(run(third, check)[0])
    finally:
        stop(third)
    for seen in (seen_while_first_runs, seen_after_first_ended):
        assert (seen["global"], seen["patched"], seen["variable"], seen["module"]) == (
            False, "StateGraph.compile", False, False)
        assert secret_file not in seen["files"]
    assert zygote.num_fds() == zygote_fds  # the zygote itself received nothing from the notebook


def test_nothing_leaks_between_two_graded_submissions(tmp_path):
    """The grader forks each file's kernel from the same zygote: what one submission's exercise
    cell changes is not there for the next, whose answer checks that before it answers."""
    leaker = write(tmp_path, "00_leaker.ipynb", with_answer(learner_00(), RIGHT + textwrap.dedent("""
        import os, langgraph.graph
        os.environ["LEAKED_VARIABLE"] = "1"
        langgraph.graph.LEAKED = 1
    """)))
    careful = write(tmp_path, "00_careful.ipynb", with_answer(learner_00(), textwrap.dedent("""
        import os, langgraph.graph
        assert "LEAKED_VARIABLE" not in os.environ and not hasattr(langgraph.graph, "LEAKED")
    """) + RIGHT))
    results = grade.grade_paths([leaker, careful], timeout=60, jobs=1)
    assert [[row.status for row in graded.rows] for graded in results] == [["passed"], ["passed"]]
    assert any(z.ready and not z.ended for z in forked_kernels._ZYGOTES.values())  # graded in forked kernels


def test_an_interrupt_reaches_the_kernel_and_its_process_group(tmp_path):
    manager = start(tmp_path)
    try:
        client = manager.test_client
        # stop_on_error=False: after an error ipykernel aborts the requests queued behind it, and the
        # next request below, sent at once, could be one of them (an "aborted" reply, no user_expressions)
        client.execute("import subprocess, time\nsleeper = subprocess.Popen(['sleep', '60'])\n"
                       "while True:\n    time.sleep(0.01)", stop_on_error=False)
        deadline = time.monotonic() + TIMEOUT
        while not psutil.Process(manager.provisioner.pid).children() and time.monotonic() < deadline:
            time.sleep(0.05)
        manager.interrupt_kernel()
        reply = client.get_shell_msg(timeout=TIMEOUT)
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        # the exit code comes back in the reply (user_expressions), not as printed output: a stream
        # message just after an interrupt can reach the client under the interrupted cell's header
        reply = client.execute_interactive("", user_expressions={"code": "sleeper.wait(timeout=30)"},
                                           timeout=TIMEOUT)
        assert reply["content"]["status"] == "ok", reply["content"]
        code = reply["content"]["user_expressions"]["code"]
        assert code == {"status": "ok", "data": {"text/plain": str(-signal.SIGINT)}, "metadata": {}}, code
        # SIGINT went to the whole group, as before
    finally:
        stop(manager)


def test_os_exit_in_a_cell_is_a_dead_kernel_with_its_exit_code(tmp_path):
    manager = start(tmp_path)
    try:
        manager.test_client.execute("import os\nos._exit(7)")
        deadline = time.monotonic() + TIMEOUT
        while manager.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not manager.is_alive()
        assert manager.provisioner.process.poll() == 7
    finally:
        stop(manager)


def test_a_restarted_kernel_is_a_new_forked_process(tmp_path):
    manager = start(tmp_path)
    try:
        run(manager, "kept = 1")
        before = manager.provisioner.pid
        manager.restart_kernel(now=True)
        manager.test_client.wait_for_ready(timeout=TIMEOUT)
        assert forked(manager) and manager.provisioner.pid != before
        assert gone(before)
        assert run(manager, "print('kept' in globals())") == ("False\n", "")
    finally:
        stop(manager)


# ----------------------------------------------------------------------------- zygotes alone
# A zygote that preloads only the standard library forks "kernels" that run a module which
# sleeps: what happens to the processes does not depend on what they imported, and these
# tests need neither LangGraph's imports nor a kernel's start.
SLEEPER = "import time\ntime.sleep(600)\n"


@pytest.fixture
def sleepy_env(tmp_path, monkeypatch):
    """An environment (its own zygote key) whose ``-m sleeper`` sleeps; zygotes preload only ``json``."""
    (tmp_path / "sleeper.py").write_text(SLEEPER)
    monkeypatch.setattr(forked_kernels, "PRELOAD", ("json",))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    yield env
    forked_kernels.close_zygotes(env)  # the zygote of the worker's notebooks keeps its place


def sleeper(zygote: Zygote, env: dict[str, str], cwd: Path) -> forked_kernels.ForkedKernel:
    with open(os.devnull, "rb") as quiet:
        return zygote.spawn([sys.executable, "-m", "sleeper"], env, str(cwd), [quiet.fileno()] * 3)


def test_closing_a_zygote_ends_the_kernels_it_still_has(sleepy_env, tmp_path):
    zygote = Zygote(sleepy_env)
    assert zygote.wait_ready(TIMEOUT)
    kernels = [sleeper(zygote, sleepy_env, tmp_path) for _ in range(2)]
    kernels[0].kill()
    assert kernels[0].wait(TIMEOUT) == -signal.SIGKILL and gone(kernels[0].pid)  # reported, and reaped
    zygote.close()  # as at exit (close_zygotes)
    assert gone(kernels[1].pid) and gone(zygote.process.pid)
    assert kernels[1].poll() is not None


MANAGER_THAT_WILL_BE_KILLED = """
import os, sys, time
from course import forked_kernels
forked_kernels.PRELOAD = ("json",)
env = dict(os.environ)
with open(os.devnull, "rb") as quiet:
    zygote = forked_kernels.zygote_for(env)
    kernel = zygote.spawn([sys.executable, "-m", "sleeper"], env, os.getcwd(), [quiet.fileno()] * 3)
print(kernel.zygote.process.pid, kernel.pid, flush=True)
time.sleep(600)
"""


def test_a_killed_manager_leaves_no_kernel_and_no_zygote(sleepy_env, tmp_path):
    manager = subprocess.Popen([sys.executable, "-c", MANAGER_THAT_WILL_BE_KILLED], stdout=subprocess.PIPE, text=True,
                               env=sleepy_env, cwd=tmp_path)
    try:
        zygote, kernel = map(int, manager.stdout.readline().split())
        manager.kill()  # no atexit, no cleanup: only its end of the zygote's socket closes
        assert gone(kernel) and gone(zygote)
    finally:
        manager.kill()
        manager.wait()
        manager.stdout.close()


def test_a_killed_zygote_takes_its_kernels_and_the_next_kernel_gets_a_new_zygote(sleepy_env, tmp_path):
    zygote = forked_kernels.zygote_for(sleepy_env)
    kernel = sleeper(zygote, sleepy_env, tmp_path)
    zygote.process.kill()  # say, by a notebook: os.kill(os.getppid(), signal.SIGKILL)
    assert kernel.wait(TIMEOUT) == -signal.SIGKILL  # so the kernel manager sees a dead kernel
    assert gone(kernel.pid)
    replacement = forked_kernels.zygote_for(sleepy_env)
    assert replacement is not zygote and replacement.wait_ready()
    sleeper(replacement, sleepy_env, tmp_path).kill()


@pytest.mark.parametrize("module, refusal", [
    ("import threading, time\nthreading.Thread(target=time.sleep, args=(30,), daemon=True).start()", "thread"),
    ("print('hello from an import')", "printed"),
    ("import warnings\nwarnings.warn('careful')", "warned"),
    ("import tempfile\ntempfile.gettempdir()", "temp folder"),
    ("import os\nkept = os.open(os.devnull, os.O_RDONLY)", "file descriptor"),
])
def test_a_zygote_whose_imports_are_unsafe_to_fork_refuses(sleepy_env, tmp_path, module, refusal):
    (tmp_path / "unsafe_import.py").write_text(module)
    zygote = Zygote(sleepy_env, preload=("unsafe_import",))
    try:
        assert not zygote.wait_ready(TIMEOUT)
        assert refusal in zygote.error
    finally:
        zygote.close()


def test_kernels_start_fresh_where_they_cannot_be_forked(sleepy_env, tmp_path, monkeypatch):
    (tmp_path / "unsafe_import.py").write_text("print('hello from an import')")
    launch = [sys.executable, "-m", "ipykernel_launcher", "-f", str(tmp_path / "kernel.json")]
    monkeypatch.setattr(forked_kernels, "PRELOAD", ("unsafe_import",))
    assert forked_kernels.fork_kernel(launch, {"env": sleepy_env}) is None  # a refusing zygote
    monkeypatch.setattr(forked_kernels, "PRELOAD", ("json",))
    assert forked_kernels.fork_kernel(launch, {"env": sleepy_env, "stdout": subprocess.PIPE}) is None
    assert forked_kernels.fork_kernel(["python3", *launch[1:]], {"env": sleepy_env}) is None  # another interpreter
    assert forked_kernels.fork_kernel(launch, {"env": {**sleepy_env, "PYTHONPATH": "relative"}}) is None
    monkeypatch.setenv(SWITCH, "0")
    assert not forked_kernels.forking_enabled()
