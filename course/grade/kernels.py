"""One kernel per graded notebook, started, restarted and stopped with public jupyter_client API.

The kernel talks to the grader over IPC (Unix domain sockets) in a private temporary
folder, not over loopback TCP. With TCP, jupyter_client picks five free ports by binding
and closing them, and the kernel binds them again seconds later: on a busy machine another
process (another kernel, a test server, an outgoing connection) can take one of them in
between, the kernel dies with "Address already in use" and the grader reports "Kernel died
before replying to kernel_info" (issue 16). Socket files in a folder only this grader uses
cannot be taken, and an IPC kernel does not print the "running over TCP without
encryption" warning. The folder (working directory, connection file, sockets) is removed
when the kernel stops, whatever happened.

The kernel is forked from a zygote process that imported ipykernel and LangGraph once
(:mod:`course.forked_kernels`): a new process per file, whose parent is the zygote, not
the worker grading it; a zygote killed by a submission is replaced for the next file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..jupyter_kernels import IpcKernelManager
from ..layout import ROOT

if TYPE_CHECKING:  # nbclient imports nbformat (about 1 s of CPU): a batch's main process needs neither
    from nbclient import NotebookClient

STARTUP_TIMEOUT = 120  # seconds a fresh kernel gets to answer; a loaded machine needs many
MAX_SOCKET_PATH = 100  # bytes; below the smallest sun_path (macOS: 104 with the final NUL)
SHORT_TEMP = "/tmp"  # for socket folders when the temp dir's path is too long
TRANSPORT = "ipc" if os.name == "posix" else "tcp"  # zmq has no IPC transport on Windows
# The kernel's TMPDIR and the folders above it: other users may pass through, not list. A
# chapter's PostgreSQL runs as another user when the grader runs as root (helpers.servers)
# and keeps its data and socket in a temp dir.
TRAVERSABLE = 0o711


def kernel_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(ROOT)])
    return env


def _fits(folder: Path) -> bool:
    """Whether sockets of a kernel folder made in ``folder`` fit in sun_path."""
    return len(os.fsencode(folder / "lgcourse-grade-xxxxxxxx" / "k" / "s-99999")) <= MAX_SOCKET_PATH


def scratch_folder() -> str:
    """A new private folder for a batch's kernel folders, in the temp dir when their socket
    paths fit there, else in /tmp. The caller removes it."""
    folder = tempfile.mkdtemp(prefix="lgcourse-batch-")
    if TRANSPORT == "ipc" and not _fits(Path(folder)):
        os.rmdir(folder)
        folder = tempfile.mkdtemp(prefix="lgcourse-batch-", dir=SHORT_TEMP)
    os.chmod(folder, TRAVERSABLE)
    return folder


class GradingKernel:
    """A python3 kernel in a private folder: ``work/`` is its working directory, ``tmp/`` its
    TMPDIR (what the graded code leaves in temp goes with the folder), ``k/`` holds the
    connection file and the IPC sockets.

    Use :meth:`start`, then :meth:`stop` in a ``finally``; :meth:`stop` also removes the
    folder. ``scratch`` is where the folder goes (default: the system's temp dir); a batch
    passes its own, which it removes even when a worker process died before it could stop
    its kernel. Such an orphaned kernel does not outlive the worker: its zygote sees the
    worker's end of their socket close and kills it (a kernel started without a zygote
    exits by itself: ipykernel watches ``JPY_PARENT_PID``).
    """

    def __init__(self, scratch: str | None = None) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="lgcourse-grade-", dir=scratch))
        self.cwd, tmp, sockets = self.folder / "work", self.folder / "tmp", self.folder / "k"
        for sub, mode in ((self.cwd, 0o700), (tmp, TRAVERSABLE), (sockets, 0o700)):
            sub.mkdir()
            os.chmod(sub, mode)
        os.chmod(self.folder, TRAVERSABLE)
        # A socket path must fit in sun_path (108 bytes on Linux, 104 on macOS); a deep
        # TMPDIR gets the sockets a short private folder of their own.
        self.short_sockets: Path | None = None
        if TRANSPORT == "ipc" and not _fits(self.folder.parent):
            self.short_sockets = Path(tempfile.mkdtemp(prefix="lgcourse-ipc-", dir=SHORT_TEMP))
        ipc = {"ip": str((self.short_sockets or sockets) / "s")} if TRANSPORT == "ipc" else {}
        # the course's manager: the kernel is forked from a zygote that imported LangGraph once
        # (course.forked_kernels), a new process per graded file as before
        self.manager = IpcKernelManager(kernel_name="python3", transport=TRANSPORT,
                                        connection_file=str(sockets / "kernel.json"), **ipc)
        env = kernel_env()
        env.update(TMPDIR=str(tmp), TEMP=str(tmp), TMP=str(tmp))
        # kernel log noise is not a result
        self.launch: dict[str, Any] = {"env": env, "stderr": subprocess.DEVNULL, "cwd": str(self.cwd)}

    async def start(self, client: NotebookClient) -> None:
        """Start the kernel and connect ``client`` (built with ``km=self.manager``) to it."""
        await client.async_start_new_kernel(**self.launch)
        await client.async_start_new_kernel_client()

    async def restart(self, client: NotebookClient) -> None:
        """Kill the kernel (it may ignore interrupts), start a fresh one, reconnect ``client``."""
        if client.kc is not None:
            client.kc.stop_channels()
            client.kc = None
        await self.manager.restart_kernel(now=True)
        await client.async_start_new_kernel_client()

    async def stop(self, client: NotebookClient) -> None:
        """Kill the kernel and its process group, close the channels, remove the folder."""
        try:
            if client.kc is not None:
                client.kc.stop_channels()
                client.kc = None
            await self.manager.shutdown_kernel(now=True)  # also removes the connection file and sockets
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
            if self.short_sockets is not None:
                shutil.rmtree(self.short_sockets, ignore_errors=True)
