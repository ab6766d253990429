"""The zygote: a process that imports a kernel's heavy libraries once, then forks kernels.

This file runs in the zygote process, which :mod:`course.forked_kernels` starts with
``python -c BOOT this-file PRELOAD...``. It imports only the standard library and loads
under a private module name (not as ``course.zygote``), so a kernel forked from it has no
``course`` package it did not import itself.

What the zygote does, in order:

1. Imports the modules it is given (ipykernel, LangGraph, langchain_core: a second or
   more of CPU that every fresh kernel paid) and checks that doing so started no thread
   and no event loop, opened no file descriptor, printed nothing, warned nothing and did
   not fix the temp folder (``tempfile.tempdir``). Otherwise it refuses to serve, and the
   kernel manager starts kernels as a fresh interpreter, as before.
2. Waits for requests on its socket (the only channel: a Unix socket pair with the kernel
   manager's process). For each it forks a child; the child becomes what
   ``python -m ipykernel_launcher -f CONNECTION_FILE`` would have been: a new session
   (its own process group, as jupyter_client starts kernels), the manager's stdin, stdout
   and stderr (passed over the socket), the kernel's working directory, environment,
   ``sys.argv`` and ``sys.path[0]``, an empty ``__main__``, and signal handlers as at
   interpreter start; then it runs ``ipykernel_launcher`` as ``__main__`` with
   :mod:`runpy` and leaves through the interpreter's normal exit (atexit handlers and all).
3. Reports each child's pid, and its exit status when it ends (the zygote is its parent).
4. Ends when the socket closes (the manager's process ended or closed it), after killing
   the process group of every child still running: no kernel outlives its manager.

The zygote never runs notebook code: each child does, after the fork, in its own memory.
Nothing a notebook does (a global, an environment variable, a patched module, an open
file) can reach the zygote or another child.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import io
import json
import os
import runpy
import select
import signal
import socket
import sys
import threading
import traceback
import warnings
from typing import Any

MAX_FDS = 3  # stdin, stdout, stderr of the kernel, passed with each request
PROBED_FDS = 256  # descriptors checked for "did an import open a file?"
# The names a fresh interpreter's __main__ starts with; the zygote's own go before a kernel runs.
MAIN_NAMES = frozenset({"__name__", "__doc__", "__package__", "__loader__", "__spec__", "__annotations__",
                        "__builtins__"})
MODULE_NAME = "_course_zygote"  # what the zygote loads this file as (forked_kernels.BOOT)


# ----------------------------------------------------------------------------- messages
def send(sock: socket.socket, message: dict[str, Any], fds: list[int] = ()) -> None:
    """One JSON line on ``sock``; ``fds`` travel with its first bytes (SCM_RIGHTS)."""
    data = (json.dumps(message) + "\n").encode()
    sent = socket.send_fds(sock, [data], list(fds)) if fds else sock.send(data)
    sock.sendall(data[sent:])


class Lines:
    """Reads JSON lines, and the descriptors sent with them, from a stream socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.pending, self.fds = sock, b"", []

    def read(self) -> list[dict[str, Any]] | None:
        """The messages completed by one read (maybe none); None at the end of the stream."""
        data, fds, _flags, _address = socket.recv_fds(self.sock, 1 << 16, MAX_FDS * 4)
        self.fds += fds
        if not data:
            return None
        self.pending += data
        *lines, self.pending = self.pending.split(b"\n")
        return [json.loads(line) for line in lines]


# ----------------------------------------------------------------------------- the zygote
def open_fds() -> set[int]:
    """Descriptors open in this process (the first :data:`PROBED_FDS`), found by fstat: portable."""
    found = set()
    for fd in range(PROBED_FDS):
        try:
            os.fstat(fd)
        except OSError:
            continue
        found.add(fd)
    return found


def _running_loop() -> bool:
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return False
    policy = asyncio.events._event_loop_policy  # None until someone asked for a loop
    local = getattr(policy, "_local", None)
    return asyncio.events._get_running_loop() is not None or getattr(local, "_loop", None) is not None


def preload(modules: list[str]) -> None:
    """Import ``modules``; raise RuntimeError if that did anything a fork would copy wrongly."""
    before = open_fds()
    said = io.StringIO()
    with warnings.catch_warnings(record=True) as warned, contextlib.redirect_stdout(said), \
            contextlib.redirect_stderr(said):
        for name in modules:
            importlib.import_module(name)
    problems = []
    if threading.active_count() != 1:
        problems.append(f"started {threading.active_count() - 1} thread(s)")
    if _running_loop():
        problems.append("made an event loop")
    if open_fds() - before:
        problems.append(f"opened file descriptor(s) {sorted(open_fds() - before)}")
    if said.getvalue():
        problems.append(f"printed {said.getvalue()[:200]!r}")  # a fresh kernel would show it in a cell
    if warned:
        problems.append(f"warned {str(warned[0].message)[:200]!r}")
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None and tempfile.tempdir is not None:
        problems.append(f"fixed the temp folder ({tempfile.tempdir}), which is each kernel's own")
    if problems:
        raise RuntimeError(f"importing {modules} {'; '.join(problems)}: forking kernels from it would not be safe")


def serve(channel: int, modules: list[str]) -> tuple[dict[str, Any], list[int], set[int]]:
    """The zygote's loop. Returns only in a forked child: its request, descriptors, and the zygote's own fds."""
    sock = socket.socket(fileno=channel)
    try:
        # JPY_PARENT_PID is read when ipykernel is imported (IPKernelApp.parent_handle): a
        # kernel watches its real parent, this process, and exits if it disappears.
        os.environ["JPY_PARENT_PID"] = str(os.getpid())
        preload(modules)
        # A child's garbage collector would otherwise visit every imported object, writing
        # to its page and so copying it: frozen, the imports stay shared with the zygote.
        gc.collect()
        gc.freeze()
    except BaseException:
        send(sock, {"error": traceback.format_exc()})
        os._exit(1)
    wake_read, wake_write = os.pipe()  # every SIGCHLD writes a byte here, so select() wakes up
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    stopping: list[int] = []
    signal.signal(signal.SIGCHLD, lambda *_: None)
    for ending in (signal.SIGTERM, signal.SIGHUP):  # ended by a signal: the kernels end first
        signal.signal(ending, lambda signum, _frame: stopping.append(signum))
    signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
    own = {channel, wake_read, wake_write}
    lines = Lines(sock)
    running: dict[int, int] = {}  # pid -> request number
    try:
        send(sock, {"ready": os.getpid()})
        while not stopping:
            readable = select.select([channel, wake_read], [], [])[0]
            if wake_read in readable:
                with contextlib.suppress(BlockingIOError):
                    while os.read(wake_read, 512):
                        pass
            _reap(sock, running)
            if channel not in readable:
                continue
            messages = lines.read()
            if messages is None:  # the manager is gone: so is every kernel it started
                break
            for request in messages:
                fds, lines.fds = lines.fds[:MAX_FDS], lines.fds[MAX_FDS:]
                why = _cannot_start(request, fds)
                if why:
                    send(sock, {"failed": request["spawn"], "error": why})
                else:
                    started, set_up = os.pipe()
                    pid = os.fork()
                    if pid == 0:
                        sock.detach()  # its descriptor is closed in become_kernel, by number
                        os.close(started)
                        return {**request, "set_up": set_up}, fds, own
                    os.close(set_up)
                    running[pid] = request["spawn"]
                    # As Popen returns only after exec: once the child closed its end, it leads
                    # its own process group, so a signal to the group reaches it.
                    with os.fdopen(started, "rb") as pipe:
                        pipe.read()
                    send(sock, {"spawned": request["spawn"], "pid": pid})
                for fd in fds:
                    os.close(fd)
    except OSError:  # the socket broke: the manager is gone
        pass
    _kill_all(running)
    os._exit(0)  # nothing to flush: skip tearing down the imported modules


def _reap(sock: socket.socket, running: dict[int, int]) -> None:
    """Collect every child that ended and report its exit code (negative: the signal that killed it)."""
    while running:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        if pid in running:
            send(sock, {"exited": running.pop(pid), "code": os.waitstatus_to_exitcode(status)})


def _cannot_start(request: dict[str, Any], fds: list[int]) -> str:
    if len(fds) != MAX_FDS:
        return "the kernel's stdin, stdout and stderr did not arrive"
    if not os.path.isdir(request["cwd"]):
        return f"no such directory: {request['cwd']!r}"
    return ""


def _kill_all(running: dict[int, int]) -> None:
    for pid in running:  # not reaped yet, so each pid is still this child's: safe to signal
        for kill in (os.killpg, os.kill):  # its group, and itself
            with contextlib.suppress(OSError):
                kill(pid, signal.SIGKILL)
    for pid in running:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


# ----------------------------------------------------------------------------- in a child
def become_kernel(request: dict[str, Any], fds: list[int], own: set[int]) -> None:
    """Turn this freshly forked child into ``python -m ipykernel_launcher ...`` and run it."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for ending in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(ending, signal.SIG_DFL)
    os.setsid()  # as jupyter_client's launcher does: interrupts go to the kernel's own group
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in (set(fds) | own) - {0, 1, 2}:
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    argv = request["argv"]  # [sys.executable, "-m", module, *arguments]
    sys.orig_argv = list(argv)
    sys.argv = ["-m", *argv[3:]]
    sys.path.insert(0, os.getcwd())  # what -m puts first (ipykernel_launcher takes it out again)
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = None  # read TMPDIR anew: each kernel may have its own
    # as the interpreter sets it up: line buffered when a terminal and buffered at all (not -u)
    sys.stdout.reconfigure(line_buffering=sys.stdout.isatty() and not sys.stdout.write_through)
    main = sys.modules["__main__"].__dict__
    for name in set(main) - MAIN_NAMES:
        del main[name]
    sys.modules.pop(MODULE_NAME, None)
    os.close(request["set_up"])  # tells the zygote: set up, in a group of its own
    runpy._run_module_as_main(argv[2])  # what `python -m` itself calls


def main() -> None:
    """The zygote process: ``python -c BOOT path/to/zygote.py MODULE_NAME CHANNEL_FD PRELOAD...``."""
    if sys.path and sys.path[0] == "":
        del sys.path[0]  # imports do not depend on the zygote's working directory
    request, fds, own = serve(int(sys.argv[3]), sys.argv[4:])
    become_kernel(request, fds, own)
