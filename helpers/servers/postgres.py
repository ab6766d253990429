"""A throwaway PostgreSQL server: initdb into a fresh temporary directory, then postgres on loopback.

The binaries come from $COURSE_POSTGRES_BIN, the pgserver wheel (pip) or the system's
PostgreSQL, in that order. PostgreSQL refuses to run as root; learners on a laptop or
Binder are ordinary users, but CI runs as root: then initdb and postgres run as the
unprivileged user ``nobody``, and the temporary directory is handed to it.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import pwd
import re
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .lifecycle import as_user, launch_process, start_on_free_port, stop_launched, wait_until_ready
from .running import (
    HOST,
    INSTALL_HINT,
    LaunchRecord,
    RunningServer,
    ServerNotInstalledError,
    ServerStartError,
    log_mentions,
    ports_to_try,
    temp_workdir,
    with_log,
)

# Where the servers come from. Module-level so tests can point them at nothing.
PGSERVER_PACKAGE = "pgserver"  # pip wheel with bundled PostgreSQL binaries
SYSTEM_POSTGRES_GLOBS = ("/usr/lib/postgresql/*/bin",)  # Debian/Ubuntu `apt-get install postgresql`
POSTGRES_BIN_ENV = "COURSE_POSTGRES_BIN"  # optional override: a directory holding initdb and postgres
UNPRIVILEGED_USER = "nobody"  # who runs PostgreSQL when we are root
POSTGRES_INSTALL_HINT = (
    f"{INSTALL_HINT} (it brings the 'pgserver' wheel with PostgreSQL binaries), "
    "or install PostgreSQL from your system packages (Debian/Ubuntu: apt-get install postgresql), "
    f"or set {POSTGRES_BIN_ENV} to a directory that holds initdb and postgres."
)

# The cluster is deleted when the server stops, so nothing it writes has to survive a power
# cut: no fsync, no waiting for the WAL at each commit (every checkpoint a saver writes is a
# commit), no full-page images. A power cut, or a crash of the server (synchronous_commit=off),
# could lose the last commits; the course never crashes this server. Never run a database
# you keep like this.
THROWAWAY_SETTINGS = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")

# SIGINT is PostgreSQL's "fast shutdown": it disconnects clients and exits cleanly,
# where SIGTERM ("smart") would wait for every client to disconnect first.
POSTGRES_STOP_SIGNAL = signal.SIGINT


def _pgserver_bin_dir() -> Path | None:
    """The bin directory of the pgserver wheel, found without importing it.

    Importing pgserver would set up its own lock files and atexit hooks; we only want
    its binaries, and run them ourselves so we control the port and the directory.
    """
    try:
        spec = importlib.util.find_spec(PGSERVER_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _postgres_bin_candidates() -> list[Path]:
    candidates = []
    if os.environ.get(POSTGRES_BIN_ENV):
        candidates.append(Path(os.environ[POSTGRES_BIN_ENV]))
    pgserver_bin = _pgserver_bin_dir()
    if pgserver_bin is not None:
        candidates.append(pgserver_bin)
    for pattern in SYSTEM_POSTGRES_GLOBS:
        # Newest major version first: sorted by the number, not the string ("9" < "16").
        found = glob.glob(pattern)
        candidates += sorted((Path(p) for p in found), key=lambda p: _version_key(p.parent.name), reverse=True)
    return candidates


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", text)) or (0,)


def _usable_by(path: Path, user: pwd.struct_passwd | None) -> bool:
    """Can ``user`` (None: ourselves) execute ``path``? Checks every parent directory too."""
    if user is None:
        return os.access(path, os.X_OK)
    # As root, os.access says yes to everything; check the mode bits the way the
    # kernel will for the unprivileged user: each parent needs search (x) permission.
    for part in [path, *path.parents]:
        try:
            st = part.stat()
        except OSError:
            return False
        if st.st_uid == user.pw_uid:
            bit = stat.S_IXUSR
        elif st.st_gid == user.pw_gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not st.st_mode & bit:
            return False
    return True


def find_postgres_bin_dir(run_as: pwd.struct_passwd | None = None) -> Path:
    """The first directory with usable ``initdb`` and ``postgres`` binaries.

    Order: $COURSE_POSTGRES_BIN, the pgserver wheel, then the system's PostgreSQL.
    Raises :class:`ServerNotInstalledError` with install instructions when none is usable.
    """
    unusable = []
    for bin_dir in _postgres_bin_candidates():
        binaries = [bin_dir / "initdb", bin_dir / "postgres"]
        if all(b.is_file() for b in binaries):
            if all(_usable_by(b, run_as) for b in binaries):
                return bin_dir
            unusable.append(str(bin_dir))
    message = "PostgreSQL server binaries (initdb, postgres) were not found. " + POSTGRES_INSTALL_HINT
    if unusable:
        message = (f"PostgreSQL binaries in {', '.join(unusable)} cannot be run by user "
                   f"'{run_as.pw_name if run_as else '?'}' (a parent directory is not world-searchable). "
                   "As root, PostgreSQL must run as an unprivileged user: install the course into a "
                   "world-readable place (e.g. a virtualenv outside /root), or install the system "
                   "package (apt-get install postgresql).")
    raise ServerNotInstalledError(message)


def _postgres_user() -> pwd.struct_passwd | None:
    """The account to run PostgreSQL as: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(UNPRIVILEGED_USER)
    except KeyError:
        raise ServerStartError(f"running as root, and PostgreSQL refuses root; user '{UNPRIVILEGED_USER}' to run it "
                               "as does not exist. Run as an ordinary user, or create that user.") from None


def _postgres_env() -> dict[str, str]:
    # PG* variables (PGDATA, PGPORT, ...) from the learner's shell must not steer our
    # cluster; LC_ALL=C keeps log messages in English so we can recognise port conflicts.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_ALL"] = "C"
    return env


def _initdb(bin_dir: Path, data_dir: Path, *, workdir: Path, log_path: Path,
            run_as: pwd.struct_passwd | None, timeout: float) -> None:
    """Create a new cluster: superuser 'postgres', trusted local connections, UTF-8."""
    argv = [str(bin_dir / "initdb"), "-D", str(data_dir), "-U", "postgres", "--auth=trust",
            "--encoding=UTF8", "--locale=C",
            "--no-sync"]  # the cluster is thrown away afterwards: skip the final fsync
    with open(log_path, "ab") as log:
        try:
            done = subprocess.run(argv, check=False, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                  cwd=workdir, env=_postgres_env(), timeout=timeout, **as_user(run_as))
        except subprocess.TimeoutExpired:
            raise ServerStartError(with_log(f"initdb did not finish within {timeout:.0f} s.", log_path)) from None
    if done.returncode != 0:
        raise ServerStartError(with_log(f"initdb failed with code {done.returncode}.", log_path))


def _postgres_ready(data_dir: Path, port: int) -> bool:
    """Ready when postmaster.pid says 'ready' and the TCP port accepts connections."""
    # A bare TCP connect succeeds while the database is still starting up; the pid
    # file's 8th line turns to "ready" only once it accepts queries.
    try:
        lines = (data_dir / "postmaster.pid").read_text().splitlines()
    except OSError:  # not written yet (or not readable yet)
        return False
    if len(lines) < 8 or lines[7].strip() != "ready":
        return False
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((HOST, port)) == 0


@contextmanager
def postgres_server(*, port: int | None = None, startup_timeout: float = 30.0) -> Iterator[RunningServer]:
    """A fresh, empty PostgreSQL server on 127.0.0.1, stopped and deleted on exit.

    Yields a :class:`RunningServer` whose ``url`` is
    ``postgresql://postgres@127.0.0.1:PORT/postgres`` (trust authentication, no password).
    ``port=None`` picks a free port; an explicit port that is taken raises
    :class:`PortInUseError`. It listens on TCP only: no Unix socket, whose path length
    is limited (about 100 bytes, and macOS's temp folder alone takes half of that).
    """
    run_as = _postgres_user()
    bin_dir = find_postgres_bin_dir(run_as)
    if port is not None:
        ports_to_try(port)  # a taken explicit port fails now, not after initdb's seconds
    with temp_workdir("postgres", run_as=run_as) as workdir:
        data_dir, log_path = workdir / "data", workdir / "server.log"
        began = time.monotonic()
        _initdb(bin_dir, data_dir, workdir=workdir, log_path=log_path, run_as=run_as, timeout=startup_timeout)

        def start(candidate: int) -> LaunchRecord:
            argv = [str(bin_dir / "postgres"), "-D", str(data_dir), "-p", str(candidate),
                    "-c", f"listen_addresses={HOST}", "-c", "unix_socket_directories=",
                    *(arg for setting in THROWAWAY_SETTINGS for arg in ("-c", setting))]
            return launch_process("postgres", argv, workdir=workdir, log_path=log_path, env=_postgres_env(),
                           cwd=workdir, stop_signal=POSTGRES_STOP_SIGNAL, run_as=run_as)

        def ready(proc: subprocess.Popen, candidate: int) -> None:
            wait_until_ready(proc, "PostgreSQL", lambda: _postgres_ready(data_dir, candidate),
                              log_path=log_path, timeout=startup_timeout,
                              port_conflict=lambda: log_mentions(log_path, r"could not bind .*Address already in use"))

        record, bound = start_on_free_port("PostgreSQL", port, start, ready)
        try:
            yield RunningServer(name="postgres", url=f"postgresql://postgres@{HOST}:{bound}/postgres", host=HOST,
                                port=bound, pid=record.pid, workdir=workdir, log_path=log_path,
                                started_in=time.monotonic() - began)
        finally:
            stop_launched(record)
