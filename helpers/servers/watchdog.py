"""Stop a server when the Python process that started it is gone, on any POSIX system.

    python -I -S watchdog.py OWNER_PID PGID STOP_SIGNAL GRACE WORKDIR

:mod:`helpers.servers` starts one watchdog next to each server, as a child of the owner
(the notebook's kernel, a test worker) and a member of the server's process group. A
killed kernel runs no ``finally`` and no ``atexit``: the server would keep running, with
its port and its temporary directory. Linux can ask the kernel for a parent-death signal,
macOS cannot; this watchdog works on both. It polls its own parent: once the owner has
died, the watchdog is re-parented (``os.getppid()`` changes), so a reused PID can never
fool it. It then stops the server's process group (``STOP_SIGNAL``, SIGKILL after
``GRACE`` seconds), removes ``WORKDIR`` and exits.

In normal operation the owner stops the server itself: the owner signals the whole group,
this watchdog ignores the polite stop signal and dies with the SIGKILL that follows.

Only the standard library, and run with ``-I -S``: it starts in a few milliseconds and
never imports the course.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time

POLL_INTERVAL = 0.2  # seconds between looks at the owner; a killed kernel's server stops within this


def group_alive(pgid: int) -> bool:
    """Does process group ``pgid`` still have a member?"""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member we may not signal still counts
        return True
    return True


def _wait_until_gone(pgid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while group_alive(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def stop_group(pgid: int, stop_signal: int, grace: float) -> None:
    """``stop_signal`` to the group, then SIGKILL to whatever is left after ``grace`` seconds."""
    for sig, wait in ((stop_signal, grace), (signal.SIGKILL, grace)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        if _wait_until_gone(pgid, wait):
            return


def watch(owner_pid: int, pgid: int, stop_signal: int, grace: float, workdir: str,
          poll: float = POLL_INTERVAL) -> None:
    """Wait until ``owner_pid`` is no longer our parent, then stop the group and remove ``workdir``."""
    while os.getppid() == owner_pid:
        time.sleep(poll)
    os.setpgid(0, 0)  # leave the server's group, so that stopping the group does not stop us
    stop_group(pgid, stop_signal, grace)
    shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str]) -> int:
    owner_pid, pgid, stop_signal = (int(a) for a in argv[:3])
    grace, workdir = float(argv[3]), argv[4]
    # The owner's normal stop signals the whole group, this process included: ignore the
    # polite signal (the SIGKILL after it ends us), and never react to a Ctrl-C.
    for sig in {stop_signal, signal.SIGINT, signal.SIGTERM}:
        signal.signal(sig, signal.SIG_IGN)
    watch(owner_pid, pgid, stop_signal, grace, workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
