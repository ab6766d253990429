"""Real child processes that skip the LangGraph import: forked from a server that did it once.

A fresh interpreter spends a second or more importing LangGraph before it runs a line of a
chapter's experiment. So the chapters that restart, crash or run real worker processes
(08, 10, 11, 12) start a :class:`ProcessServer` early: a plain child Python process (a fresh
interpreter, started with :mod:`subprocess`, not a copy of the notebook's kernel, so it
inherits no open SQLite connection, socket or thread) that imports the modules it is given once. Then, per request,
it forks a child that runs an importable target, ``"module:function"`` with JSON arguments,
and reports the child's pid and, when it ends, its exit status. Every child is a separate
OS process with its own memory; ``os._exit(17)`` in it is a real crash, reported as 17.

* ``server = ProcessServer(["helpers.ledger.service"], log=...)`` starts the server and
  returns at once: its imports overlap with whatever the caller does next.
* :meth:`ProcessServer.start` runs ``target(*args)`` in a new child whose stdout and stderr
  go to ``log`` (never into a notebook cell); :meth:`ProcessServer.wait` collects exit codes
  of one child or of several running in parallel (killing them after a timeout);
  :meth:`ProcessServer.run` does both for one child.
* :func:`run_script` is a target that runs a whole program given as source text, as
  ``python -c`` would, so a chapter can show a child's program in a cell.
* ``ProcessServer(..., env={...})`` sets variables before the server's imports, for
  settings a library reads once, when it is imported (``LANGGRAPH_STRICT_MSGPACK``).
* :meth:`ProcessServer.close` ends the server. It also ends by itself when its stdin
  closes, which happens when the process that made it exits or is killed (a restarted
  kernel); either way it first kills the children it still has.
* :func:`server_for` lends an open server of this process that preloaded the given modules,
  or makes one for a ``with`` block: a check can reuse the server its chapter started.

Requests and replies are JSON lines on the server's stdin and stdout: no sockets, no
temporary files, nothing in the temp folder. Files are written only where the caller
says (the logs). The server never starts a thread (it refuses a preload that does), so
forking it is safe. Chapter 06 forks its kernel instead (:mod:`helpers.booking_crashes`):
its children run functions defined in the notebook, which no other process can import.
Chapters 01 and 07 fork it too (:mod:`helpers.kernel_forks`), for one short child each,
which a server's own import would only delay.

Platforms without ``os.fork`` (Windows) get the same interface and results, only slower:
no server process is started, and every target runs in a fresh interpreter.
"""

from __future__ import annotations

import gc
import importlib
import itertools
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

__all__ = ["Child", "ProcessServer", "run_script", "run_target", "serve", "server_for", "target_name"]

SERVER_COMMAND = "import sys; from helpers.preloaded_processes import serve; serve(sys.argv[1:])"
FRESH_COMMAND = ("import json, os, sys; from helpers.preloaded_processes import run_target; "
                 "os._exit(run_target(sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]))")


# ----------------------------------------------------------------------------- in the child
def _resolve(target: str) -> Callable[..., Any]:
    module, _, name = target.partition(":")
    found: Any = importlib.import_module(module)
    for part in name.split("."):
        found = getattr(found, part)
    return found


def run_target(target: str, args: Sequence[Any], log: str) -> int:
    """Run ``target(*args)`` in this process, with stdin empty and stdout and stderr appended to ``log``.

    Returns the exit code the child ends with: 0 when the target returns, the code of a
    ``sys.exit``, 1 (and the traceback in the log) when it raises. ``os._exit`` inside the
    target ends the process at once, with its own code.
    """
    with open(log, "ab", buffering=0) as file:
        os.dup2(file.fileno(), 1)
        os.dup2(file.fileno(), 2)
    empty = os.open(os.devnull, os.O_RDONLY)
    os.dup2(empty, 0)
    os.close(empty)
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(line_buffering=True)  # a line printed before a crash reaches the log
    try:
        _resolve(target)(*args)
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:  # the child's failure is its exit code; the traceback goes to its log
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    return code


def run_script(source: str, *argv: str) -> None:
    """Run Python ``source`` in this process as ``python -c source *argv`` would: a target for a script.

    ``sys.argv[1:]`` is ``argv`` and the script runs as ``__main__``. Forked from a server
    that preloaded what the script imports, its imports are already done: a chapter can
    show a child's whole program as a string, and not wait for a fresh interpreter.
    """
    sys.argv = ["-c", *argv]
    exec(compile(source, "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})


# ----------------------------------------------------------------------------- the server
def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def serve(preload: Sequence[str]) -> None:
    """The server's main loop (in its own process): import ``preload``, then fork on request.

    Reads JSON requests from stdin, one per line: ``{"start": n, "target": "module:function",
    "args": [...], "log": path}`` forks child ``n``; ``{"kill": n}`` kills it. Replies on
    stdout: ``{"started": n, "pid": pid}``, ``{"exited": n, "code": code}``,
    ``{"failed": n, "error": text}``, or ``{"error": text}`` when a preload import failed.
    Ends when stdin closes, after killing and reaping the children still running.
    """
    requests, replies = os.dup(0), os.dup(1)
    quiet = os.open(os.devnull, os.O_RDWR)  # what preloaded modules print must not mix with the replies
    os.dup2(quiet, 0)
    os.dup2(quiet, 1)
    os.close(quiet)

    def reply(**message: Any) -> None:
        _write_all(replies, (json.dumps(message) + "\n").encode())

    try:
        for name in preload:
            importlib.import_module(name)
        if threading.active_count() != 1:
            raise RuntimeError(f"importing {list(preload)} started a thread: forking would not be safe")
        # A child's garbage collector would otherwise visit every imported object, writing to
        # its page and so copying it: frozen, the imports stay shared with the server.
        gc.collect()
        gc.freeze()
    except BaseException:
        reply(error=traceback.format_exc())
        os._exit(1)
    wake_read, wake_write = os.pipe()  # every SIGCHLD writes a byte here, so select() wakes up
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
    running: dict[int, int] = {}  # pid -> request number
    pending, reading = b"", True

    def fork(request: dict[str, Any]) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in (requests, replies, wake_read, wake_write):
                os.close(fd)
            os._exit(run_target(request["target"], request["args"], request["log"]))
        running[pid] = request["start"]
        reply(started=request["start"], pid=pid)

    def handle(request: dict[str, Any]) -> None:
        if "start" in request:
            try:
                fork(request)
            except OSError as exc:
                reply(failed=request["start"], error=f"{type(exc).__name__}: {exc}")
        elif "kill" in request:
            for pid, number in running.items():
                if number == request["kill"]:
                    os.kill(pid, signal.SIGKILL)

    try:
        while reading or running:
            watched = [requests, wake_read] if reading else [wake_read]
            readable = select.select(watched, [], [], 1.0)[0]
            if wake_read in readable:
                while True:
                    try:
                        if not os.read(wake_read, 512):
                            break
                    except BlockingIOError:
                        break
            while running:
                pid, status = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                if pid in running:
                    reply(exited=running.pop(pid), code=os.waitstatus_to_exitcode(status))
            if requests in readable:
                data = os.read(requests, 65536)
                if not data:
                    reading = False
                    for pid in running:  # nobody is left to wait for them
                        os.kill(pid, signal.SIGKILL)
                pending += data
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    handle(json.loads(line))
    except BrokenPipeError:  # the caller is gone: so is everything it asked for
        for pid in running:
            os.kill(pid, signal.SIGKILL)
    os._exit(0)  # nothing to flush or clean up: skip tearing down the imported modules


# ----------------------------------------------------------------------------- in the caller
@dataclass(frozen=True)
class Child:
    """One child process: the server's number for it, its pid, and what it runs."""

    number: int
    pid: int
    target: str


class _Replies:
    """What the server said so far; the reader thread fills it, callers wait on ``changed``."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.started: dict[int, int] = {}
        self.exited: dict[int, int] = {}
        self.failed: dict[int, str] = {}
        self.error = ""
        self.ended = False


def _read_replies(stream: IO[bytes], replies: _Replies) -> None:
    # holds the pipe and the replies, not the server: a server nobody refers to is collected
    for line in stream:
        message = json.loads(line)
        with replies.changed:
            if "started" in message:
                replies.started[message["started"]] = message["pid"]
            elif "exited" in message:
                replies.exited[message["exited"]] = message["code"]
            elif "failed" in message:
                replies.failed[message["failed"]] = message["error"]
            else:
                replies.error = message.get("error", str(message))
            replies.changed.notify_all()
    with replies.changed:
        replies.ended = True
        replies.changed.notify_all()


def target_name(target: str | Callable[..., Any]) -> str:
    """``"module:function"`` for a module-level function (a string is checked and returned)."""
    if callable(target):
        module, name = getattr(target, "__module__", None), getattr(target, "__qualname__", "")
        if not module or module == "__main__" or "<" in name:
            raise ValueError(f"{target!r} is not importable: use a function defined at the top of a module")
        return f"{module}:{name}"
    if target.count(":") != 1 or not all(target.split(":")):
        raise ValueError(f"a target is 'module:function', not {target!r}")
    return target


_OPEN: weakref.WeakSet[ProcessServer] = weakref.WeakSet()


class ProcessServer:
    """A child process that imports ``preload`` once, then forks a child per :meth:`start`.

    ``log`` receives the server's own stderr. ``fork=False`` (the default where
    ``os.fork`` is missing) starts no server: every target runs in a fresh interpreter.
    ``env`` adds environment variables for the server (and so for every child), set before
    it imports ``preload``: for settings a library reads once, when it is imported.
    """

    def __init__(self, preload: Sequence[str] = (), *, log: str | Path = os.devnull, fork: bool | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.preload = tuple(preload)
        self.env = dict(env or {})  # set for the server before its imports, so inherited by every child
        self._process_env = {**os.environ, **self.env} if self.env else None  # None: inherit ours
        self.forks = hasattr(os, "fork") if fork is None else fork
        self.exit_code: int | None = None
        self._owner = os.getpid()
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self._replies = _Replies()
        self._fresh: dict[int, subprocess.Popen[bytes]] = {}
        self.process: subprocess.Popen[bytes] | None = None
        if self.forks:
            with open(log, "ab") as server_log:
                self.process = subprocess.Popen([sys.executable, "-c", SERVER_COMMAND, *self.preload],
                                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=server_log,
                                                env=self._process_env)
            self._reader = threading.Thread(target=_read_replies, args=(self.process.stdout, self._replies),
                                            daemon=True, name="process-server-replies")
            self._reader.start()
        _OPEN.add(self)

    @property
    def is_open(self) -> bool:
        """True until :meth:`close`, while the server process lives (always in this process, not a fork of it)."""
        alive = self.process is None or self.process.poll() is None
        return self.exit_code is None and alive and os.getpid() == self._owner

    def start(self, target: str | Callable[..., Any], *args: Any, log: str | Path = os.devnull,
              timeout: float = 120.0) -> Child:
        """Start ``target(*args)`` in a new child (``args`` must be JSON values); returns at once.

        ``target`` is ``"module:function"`` or a module-level function. The child's stdout
        and stderr are appended to ``log``. The first start waits until the server has
        imported its modules (at most ``timeout`` seconds).
        """
        name, arguments, number = target_name(target), json.loads(json.dumps(list(args))), next(self._numbers)
        if not self.is_open:
            raise RuntimeError("this process server is closed; make a new one")
        if self.process is None:
            with open(log, "ab") as child_log:
                self._fresh[number] = subprocess.Popen(
                    [sys.executable, "-c", FRESH_COMMAND, name, json.dumps(arguments), str(log)],
                    stdin=subprocess.DEVNULL, stdout=child_log, stderr=child_log,
                    env=self._process_env)
            return Child(number, self._fresh[number].pid, name)
        self._send({"start": number, "target": name, "args": arguments, "log": str(log)})
        self._await(lambda: number in self._replies.started or number in self._replies.failed,
                    time.monotonic() + timeout, f"starting {name}")
        if number in self._replies.failed:
            raise RuntimeError(f"could not start {name}: {self._replies.failed[number]}")
        return Child(number, self._replies.started[number], name)

    def wait(self, children: Sequence[Child], timeout: float = 90.0) -> list[int]:
        """Wait for every child (all within ``timeout`` seconds); their exit codes, in order.

        A child killed by a signal has the signal's negative number. Raises TimeoutError
        after killing the children still running when time is up.
        """
        deadline = time.monotonic() + timeout
        try:
            return [self._exit_code(child, deadline) for child in children]
        except TimeoutError:
            late = [child for child in children if self._exit_code(child, time.monotonic()) is None]
            for child in late:
                self._kill(child)
            raise TimeoutError(f"child process(es) {[c.pid for c in late]} still running after {timeout} s; "
                               "killed") from None

    def wait_any(self, children: Sequence[Child], timeout: float = 90.0) -> Child:
        """The first of ``children`` to end (waiting up to ``timeout`` seconds); kills nothing.

        Without a server (no ``os.fork``) it waits for the first child in the list.
        Raises TimeoutError if none has ended in time.
        """
        if not children:
            raise ValueError("no children to wait for")
        if self.process is None:
            self._exit_code(children[0], time.monotonic() + timeout)
            return children[0]
        exited = self._replies.exited
        self._await(lambda: any(c.number in exited for c in children), time.monotonic() + timeout,
                    f"waiting for one of {[c.target for c in children]}")
        return next(c for c in children if c.number in exited)

    def run(self, target: str | Callable[..., Any], *args: Any, log: str | Path = os.devnull,
            timeout: float = 90.0) -> int:
        """:meth:`start` one child and :meth:`wait` for it; its exit code."""
        return self.wait([self.start(target, *args, log=log)], timeout)[0]

    def close(self, timeout: float = 10.0) -> int:
        """End the server (children still running are killed first); its exit code, 0 when all went well."""
        _OPEN.discard(self)
        if self.exit_code is not None:
            return self.exit_code
        for child in self._fresh.values():
            if child.poll() is None:
                child.kill()
                child.wait()
        if self.process is None:
            self.exit_code = 0
            return 0
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.exit_code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()  # only this server's own process, by its handle
            self.exit_code = self.process.wait()
        self._reader.join(timeout)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return self.exit_code

    def __enter__(self) -> ProcessServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        stdin = getattr(getattr(self, "process", None), "stdin", None)
        if stdin is not None and not stdin.closed and os.getpid() == self._owner:
            stdin.close()  # a forgotten server ends: its process sees the end of its input

    # -- plumbing ----------------------------------------------------------------------------
    def _send(self, request: dict[str, Any]) -> None:
        assert self.process is not None and self.process.stdin is not None
        with self._lock:
            try:
                self.process.stdin.write((json.dumps(request) + "\n").encode())
                self.process.stdin.flush()
            except BrokenPipeError:
                raise RuntimeError(f"the process server has ended{self._why()}") from None

    def _why(self) -> str:
        return f":\n{self._replies.error.strip()}" if self._replies.error else ""

    def _await(self, done: Callable[[], bool], deadline: float, what: str) -> None:
        with self._replies.changed:
            while not done():
                if self._replies.ended:
                    raise RuntimeError(f"the process server ended while {what}{self._why()}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{what}: no answer in time")
                self._replies.changed.wait(remaining)

    def _exit_code(self, child: Child, deadline: float) -> int | None:
        """The child's exit code once it has ended; None if ``deadline`` is already past (TimeoutError if missed)."""
        if self.process is None:
            fresh = self._fresh[child.number]
            if deadline <= time.monotonic():
                return fresh.poll()
            try:
                return fresh.wait(deadline - time.monotonic())
            except subprocess.TimeoutExpired:
                raise TimeoutError(child.target) from None
        if deadline <= time.monotonic():
            return self._replies.exited.get(child.number)
        self._await(lambda: child.number in self._replies.exited, deadline, f"waiting for {child.target}")
        return self._replies.exited[child.number]

    def _kill(self, child: Child) -> None:
        if self.process is None:
            self._fresh[child.number].kill()
            self._fresh[child.number].wait()
            return
        self._send({"kill": child.number})
        self._await(lambda: child.number in self._replies.exited, time.monotonic() + 10, f"killing {child.target}")


@contextmanager
def server_for(preload: Sequence[str]) -> Iterator[ProcessServer]:
    """This process's open server that preloaded every module of ``preload``; else a new one for the block.

    A borrowed server stays open after the block; a new one is closed at its end. A server
    made with an ``env`` of its own is never lent: its children would not run as asked.
    """
    for server in list(_OPEN):
        if server.is_open and not server.env and set(preload) <= set(server.preload):
            yield server
            return
    with ProcessServer(preload) as server:
        yield server
