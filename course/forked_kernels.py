"""Notebook kernels that start in a fraction of a second: forked from a zygote that imported once.

A fresh ``python -m ipykernel_launcher`` spends about 0.5 s of CPU starting and then 0.6-1 s
importing LangGraph and langchain_core in the notebook's first cell; the test suite, the
build and the grader pay that for every notebook. The course's kernel managers
(:class:`course.jupyter_kernels.IpcKernelManager` and ``IpcBlockingKernelManager``) instead
use :class:`ForkingProvisioner`: a jupyter_client kernel provisioner that asks a
:mod:`zygote <course.zygote>` (a plain Python process that imported :data:`PRELOAD` once and
never runs notebook code) to fork a child, which then runs ``ipykernel_launcher`` with the
manager's connection file, exactly as the fresh interpreter would have.

What stays as it was:

* **Every kernel is a new process** with its own memory: nothing one notebook does reaches
  another or the zygote (``tests/course/test_forked_kernels.py`` tries).
* **Signals and death**: the child leads its own process group (interrupts and kills go to
  the group, as jupyter_client's launcher arranges); ``os._exit`` in a cell is a dead kernel
  with its exit code, reported by the zygote (the child's parent) and polled by the manager.
* **Cleanup**: a zygote ends when its socket closes, which happens when the manager's
  process closes it (at exit) or dies, however: it kills the process group of every kernel
  it still has first. A kernel whose zygote was killed exits by itself (ipykernel watches
  its parent) and is killed by the manager, which sees the zygote go.
* **Anything unusual starts a fresh interpreter**, as before: another command than this
  interpreter's ``-m ipykernel_launcher``, a pipe for a standard stream, a platform
  without ``os.fork`` (Windows), ``COURSE_FORK_KERNELS=0``, or a zygote whose imports
  started a thread, opened a file, printed or warned (then forking would not be safe).

One zygote serves kernels with the same environment, up to the variables that differ per
kernel and are read only after start (:data:`PER_KERNEL_ENV`): an environment variable a
library reads when it is imported must be the same in the zygote as in the kernel, so
another environment (a test's ``monkeypatch.setenv``) gets a zygote of its own.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning import LocalProvisioner

from . import zygote as zygote_module

__all__ = ["PER_KERNEL_ENV", "PRELOAD", "SWITCH", "ForkedKernel", "ForkingProvisioner", "Zygote", "close_zygotes",
           "forking_enabled", "zygote_for"]

# Imported by the zygote. Chosen by measurement (course.bench, issue 29): what the chapters'
# setup cells import that costs CPU, minus what starts a thread when imported. numpy, and so
# matplotlib, is left out: OpenBLAS starts its thread pool when numpy is imported.
PRELOAD = ("ipykernel.kernelapp", "langchain_core.messages", "langgraph.graph", "langgraph.types", "langgraph.func",
           "langgraph.checkpoint.memory", "langgraph.checkpoint.sqlite", "langgraph.checkpoint.postgres")
# Set per kernel and read only after the kernel started (tempfile reads TMPDIR on first use;
# the zygote refuses to serve if an import fixed it), or changed by pytest for every test item
# (nbval's too): one zygote serves kernels that differ in them.
PER_KERNEL_ENV = frozenset({"JPY_PARENT_PID", "JPY_SESSION_NAME", "TMPDIR", "TEMP", "TMP", "PYTEST_CURRENT_TEST"})
SWITCH = "COURSE_FORK_KERNELS"  # "0": fresh interpreters, as jupyter_client starts them; unset or else: fork
READY_TIMEOUT = 120.0  # seconds the zygote gets for its imports; a loaded machine needs many
REPLY_TIMEOUT = 30.0  # seconds the zygote gets to answer a request to fork
MAX_IDLE_ZYGOTES = 2  # per process; a zygote with running kernels is never closed for room
BOOT = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location(sys.argv[2], sys.argv[1]); "
        "zygote = importlib.util.module_from_spec(spec); sys.modules[spec.name] = zygote; "
        "spec.loader.exec_module(zygote); del spec; zygote.main()")  # argv: this file, its module name, ...
LAUNCHER = "ipykernel_launcher"


def forking_enabled() -> bool:
    """Whether kernels may be forked here: ``os.fork`` exists and ``COURSE_FORK_KERNELS`` is not ``0``.

    On by default since the grader's stress test passed 20 batches with it (under a CPU hog,
    load 11-27: see CONTRIBUTING.md); ``COURSE_FORK_KERNELS=0`` starts every kernel as a
    fresh interpreter, as jupyter_client does.
    """
    return hasattr(os, "fork") and os.environ.get(SWITCH, "1") != "0"


class ForkedKernel:
    """A kernel forked by a zygote, with the part of :class:`subprocess.Popen` the provisioner uses."""

    stdin = stdout = stderr = None  # LocalProvisioner.wait closes these when set

    def __init__(self, zygote: Zygote, number: int, pid: int) -> None:
        self.zygote, self.number, self.pid = zygote, number, pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        with self.zygote.changed:
            if not self.zygote.changed.wait_for(lambda: self.returncode is not None, timeout):
                raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout or 0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:  # never a pid the zygote has reaped (it may belong to another process by now)
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Zygote:
    """A zygote process (see :mod:`course.zygote`) started with ``env``, and the thread that reads its replies."""

    def __init__(self, env: dict[str, str], preload: tuple[str, ...] | None = None) -> None:
        self.preload = PRELOAD if preload is None else tuple(preload)
        self.changed = threading.Condition()
        self.ready = False
        self.ended = False
        self.error = ""
        self.kernels: dict[int, ForkedKernel] = {}
        self._replies: dict[int, dict[str, Any]] = {}
        self._numbers = itertools.count(1)
        self._send_lock = threading.Lock()
        self.last_used = time.monotonic()
        self.sock, theirs = socket.socketpair()
        with theirs:
            # The variables of one kernel are not the zygote's: it gets this process's (ps and
            # psutil show a forked kernel with the environment its zygote started with).
            env = {k: v for k, v in env.items() if k not in PER_KERNEL_ENV}
            env.update({k: os.environ[k] for k in PER_KERNEL_ENV - {"JPY_PARENT_PID"} if k in os.environ})
            self.process = subprocess.Popen(
                [sys.executable, "-c", BOOT, zygote_module.__file__, zygote_module.MODULE_NAME, str(theirs.fileno()),
                 *self.preload],
                pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, env=env, start_new_session=True)  # Ctrl-C in a terminal is not for it
        self._reader = threading.Thread(target=self._read, daemon=True, name="kernel-zygote-replies")
        self._reader.start()

    @property
    def running(self) -> list[ForkedKernel]:
        return [k for k in self.kernels.values() if k.returncode is None]

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> bool:
        """True once the zygote has imported :attr:`preload`; False if it refused or ended (see :attr:`error`)."""
        with self.changed:
            self.changed.wait_for(lambda: self.ready or self.ended, timeout)
            if not self.ready and not self.ended:
                self.error = f"the kernel zygote did not finish its imports in {timeout:g} s"
            return self.ready and not self.ended

    def spawn(self, argv: list[str], env: dict[str, str], cwd: str, stdio: list[int]) -> ForkedKernel:
        """Fork a kernel running ``argv`` (``[python, "-m", module, ...]``) with these standard streams."""
        number = next(self._numbers)
        self.last_used = time.monotonic()
        with self._send_lock:
            try:
                zygote_module.send(self.sock, {"spawn": number, "argv": argv, "env": env, "cwd": cwd}, stdio)
            except OSError as exc:
                raise RuntimeError(f"the kernel zygote has ended: {exc}") from None
        with self.changed:
            if not self.changed.wait_for(lambda: number in self._replies or self.ended, REPLY_TIMEOUT):
                raise RuntimeError(f"the kernel zygote did not answer in {REPLY_TIMEOUT:g} s")
            reply = self._replies.pop(number, None)
            if reply is None:
                raise RuntimeError(f"the kernel zygote has ended{self._why()}")
            if "failed" in reply:
                raise RuntimeError(f"the kernel zygote could not start the kernel: {reply['error']}")
            kernel = self.kernels[number] = ForkedKernel(self, number, reply["pid"])
            return kernel

    def close(self, timeout: float = 10.0) -> None:
        """End the zygote (it kills the process group of each kernel it still has) and wait for it."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()  # only this zygote's own process, by its handle
            self.process.wait()
        self._reader.join(timeout)
        self._end(kill=False)  # the zygote killed and reaped them

    # -- plumbing --------------------------------------------------------------------------
    def _why(self) -> str:
        return f":\n{self.error.strip()}" if self.error else ""

    def _read(self) -> None:
        lines = zygote_module.Lines(self.sock)
        while True:
            try:
                messages = lines.read()
            except OSError:
                messages = None
            if messages is None:
                break
            with self.changed:
                for message in messages:
                    if "ready" in message:
                        self.ready = True
                    elif "error" in message and len(message) == 1:
                        self.error = message["error"]
                    elif "exited" in message:
                        self.kernels[message["exited"]].returncode = message["code"]
                    else:
                        self._replies[message.get("spawned", message.get("failed"))] = message
                self.changed.notify_all()
        self._end(kill=True)

    def _end(self, kill: bool) -> None:
        """The zygote is gone. Its kernels that did not report an exit are orphans: ``kill`` them."""
        with self.changed:
            for kernel in self.running:
                if kill:  # not reaped by the zygote (it would have said so): the pid is still the kernel's
                    with contextlib.suppress(OSError):
                        os.killpg(kernel.pid, signal.SIGKILL)
                kernel.returncode = -signal.SIGKILL
            self.ended = True
            self.changed.notify_all()


# ----------------------------------------------------------------------------- one per environment
_ZYGOTES: dict[tuple[tuple[str, str], ...], Zygote] = {}
_LOCK = threading.Lock()


def _key(env: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in env.items() if k not in PER_KERNEL_ENV))


def zygote_for(env: dict[str, str]) -> Zygote | None:
    """This process's ready zygote for kernels with environment ``env`` (started if needed); None if refused."""
    key = _key(env)
    with _LOCK:
        found = _ZYGOTES.get(key)
        if found is not None and found.ended and found.ready:  # it served, then died (killed): start another
            found = None
        if found is None:
            _make_room()
            found = _ZYGOTES[key] = Zygote(env)
    # A refused or broken zygote stays in the table: kernels of this environment start fresh from now on.
    return found if found.wait_ready() else None


def _make_room() -> None:
    idle = sorted((z.last_used, k) for k, z in _ZYGOTES.items() if not z.running)
    while len(_ZYGOTES) >= MAX_IDLE_ZYGOTES and idle:
        _ZYGOTES.pop(idle.pop(0)[1]).close()


@atexit.register
def close_zygotes(env: dict[str, str] | None = None) -> None:
    """End every zygote of this process, or only the one for kernels with environment ``env``,
    and the kernels they still have; run at exit too."""
    with _LOCK:
        keys = list(_ZYGOTES) if env is None else [k for k in [_key(env)] if k in _ZYGOTES]
        zygotes = [_ZYGOTES.pop(k) for k in keys]
    for zygote in zygotes:
        zygote.close()


def _forget_after_fork() -> None:
    """In a forked copy of this process: the zygotes are the parent's; only our copy of each socket goes."""
    for zygote in _ZYGOTES.values():
        zygote.sock.close()
    _ZYGOTES.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


# ----------------------------------------------------------------------------- the provisioner
def _stream(value: Any, default: int, closing: list[int]) -> int | None:
    """The descriptor a standard stream of the kernel gets (None: this value needs Popen)."""
    if value is None:
        return default
    if value == subprocess.DEVNULL:
        fd = os.open(os.devnull, os.O_RDWR)
        closing.append(fd)
        return fd
    if isinstance(value, int) and value >= 0:
        return value
    if hasattr(value, "fileno"):
        return value.fileno()
    return None  # subprocess.PIPE, subprocess.STDOUT


def fork_kernel(cmd: list[str], kwargs: dict[str, Any]) -> ForkedKernel | None:
    """Start the kernel ``cmd`` (with Popen-style ``kwargs``) forked from a zygote; None when it cannot be."""
    if not forking_enabled() or cmd[:3] != [sys.executable, "-m", LAUNCHER]:
        return None
    if set(kwargs) - {"env", "cwd", "stdin", "stdout", "stderr"}:
        return None
    env = dict(kwargs.get("env") or os.environ)
    if any(not os.path.isabs(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p):
        return None  # a relative entry depends on the kernel's working directory, not the zygote's
    closing: list[int] = []
    try:
        # stdin: the read end of a pipe nobody writes to, as jupyter_client's launcher gives a kernel
        read_end, write_end = os.pipe() if kwargs.get("stdin") is None else (None, None)
        closing += [fd for fd in (read_end, write_end) if fd is not None]
        stdio = [read_end if read_end is not None else _stream(kwargs.get("stdin"), 0, closing),
                 _stream(kwargs.get("stdout"), 1, closing), _stream(kwargs.get("stderr"), 2, closing)]
        if None in stdio:
            return None
        kernel_env = {**env, "JPY_PARENT_PID": str(os.getpid())}  # as jupyter_client sets it: the manager's pid
        cwd = str(kwargs.get("cwd") or os.getcwd())
        for attempt in (1, 2):
            zygote = zygote_for(env)
            if zygote is None:
                return None
            try:
                return zygote.spawn(list(cmd), kernel_env, cwd, stdio)
            except RuntimeError:
                if not zygote.ended or attempt == 2:  # a zygote that died (killed) is replaced once
                    raise
        return None
    finally:
        for fd in closing:
            os.close(fd)


class ForkingProvisioner(LocalProvisioner):
    """jupyter_client's local provisioner, with the kernel forked from a zygote when it can be (see the module)."""

    forked = False

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        kernel = await asyncio.to_thread(fork_kernel, cmd, LocalProvisioner._scrub_kwargs(kwargs))
        if kernel is None:
            self.forked = False
            return await super().launch_kernel(cmd, **kwargs)
        self.forked = True
        self.process = kernel
        self.pid = self.pgid = kernel.pid  # the child called setsid(): it leads its own group
        self.cwd = kwargs.get("cwd") or Path.cwd()
        return self.connection_info
