"""Start real servers for a notebook or a test, and always stop them again.

Two context managers, used the same way::

    with postgres_server() as pg:          # a throwaway PostgreSQL cluster
        PostgresSaver.from_conn_string(pg.url)  # postgresql://postgres@127.0.0.1:PORT/postgres

    with agent_server(GRAPHS) as api:      # `langgraph dev` serving helpers.agent_graphs
        get_sync_client(url=api.url)       # http://127.0.0.1:PORT

Each one picks a free loopback port and a fresh temporary directory, starts the server
as a child process in its own process group, and polls it until it answers (with a
deadline: no fixed sleeps). If it never gets ready, :class:`ServerStartError` carries
the last lines of its log. On the way out, also when the ``with`` body raises, the whole
process group is stopped (a polite signal, then SIGKILL after a grace period) and the
temporary directory is removed. :func:`leftover_server_processes` lists anything this
module started that is still there, so tests can prove nothing leaked.

PostgreSQL refuses to run as root. Learners on a laptop or Binder are ordinary users,
but CI runs as root: then initdb and postgres run as the unprivileged user ``nobody``
(``subprocess``'s ``user=``/``group=``), and the temporary directory is handed to it.

POSIX only (Linux, macOS): it relies on process groups and Unix sockets.
"""

from __future__ import annotations

import atexit
import ctypes
import glob
import importlib.util
import json
import os
import pwd
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
TEMP_PREFIX = "lgcourse-server-"
OWNER_FILE = "owner.pid"  # in each temporary directory: the Python process that made it
LOG_TAIL_LINES = 20
LOG_MARKER = "=== helpers.servers starting:"
POLL_INTERVAL = 0.05  # seconds between readiness checks inside a deadline loop
STOP_GRACE = 10.0  # seconds a server gets to shut down cleanly before SIGKILL
PORT_ATTEMPTS = 3  # fresh ports to try when an auto-picked port is taken meanwhile

# Where the servers come from. Module-level so tests can point them at nothing.
PGSERVER_PACKAGE = "pgserver"  # pip wheel with bundled PostgreSQL binaries
SYSTEM_POSTGRES_GLOBS = ("/usr/lib/postgresql/*/bin",)  # Debian/Ubuntu `apt-get install postgresql`
POSTGRES_BIN_ENV = "COURSE_POSTGRES_BIN"  # optional override: a directory holding initdb and postgres
UNPRIVILEGED_USER = "nobody"  # who runs PostgreSQL when we are root
LANGGRAPH_CLI_MODULES = ("langgraph_cli", "langgraph_api")  # `langgraph dev` needs both ([inmem] extra)

INSTALL_HINT = "Install the course requirements: pip install -r requirements.txt"
POSTGRES_INSTALL_HINT = (
    f"{INSTALL_HINT} (it brings the 'pgserver' wheel with PostgreSQL binaries), "
    "or install PostgreSQL from your system packages (Debian/Ubuntu: apt-get install postgresql), "
    f"or set {POSTGRES_BIN_ENV} to a directory that holds initdb and postgres."
)
AGENT_SERVER_INSTALL_HINT = f"{INSTALL_HINT} (it brings langgraph-cli[inmem])."

# Environment for `langgraph dev` that keeps it offline and quiet: no LangSmith tracing,
# no CLI analytics, no PyPI version check, no colour codes in the log we show on failure.
OFFLINE_AGENT_ENV = {
    "LANGSMITH_TRACING": "false",
    "LANGSMITH_TRACING_V2": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LOG_COLOR": "false",
    "NO_COLOR": "1",
    "DO_NOT_TRACK": "1",
    "PYTHONUNBUFFERED": "1",
}
# Keys that would let the server talk to LangSmith if a learner has them set.
SECRET_ENV_KEYS = ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT")


class ServerStartError(RuntimeError):
    """A server did not start or did not become ready in time."""


class ServerNotInstalledError(ServerStartError):
    """The server's program or package is not installed; the message says how to install it."""


class PortInUseError(ServerStartError):
    """The requested port is already taken."""


class _PortConflict(ServerStartError):
    """An auto-picked port was taken between picking and binding: try another one."""


@dataclass(frozen=True)
class RunningServer:
    """A started server: where to connect, and where its files and log are."""

    name: str
    url: str
    host: str
    port: int
    pid: int
    workdir: Path
    log_path: Path
    started_in: float  # seconds from entering the `with` to ready (PostgreSQL: initdb included)

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last ``lines`` lines of the server's log."""
        return log_tail(self.log_path, lines)


@dataclass(frozen=True)
class _Record:
    """A server process this module launched, kept to find (and stop) leftovers."""

    name: str
    proc: subprocess.Popen
    workdir: Path
    stop_signal: int

    @property
    def pid(self) -> int:
        return self.proc.pid


_STARTED: list[_Record] = []  # every launch, in order
_WORKDIRS: list[Path] = []  # every temporary directory made, in order


# ---------------------------------------------------------------------------------------
# Ports, logs, temporary directories
# ---------------------------------------------------------------------------------------


def free_port(host: str = HOST) -> int:
    """A port that is free on ``host`` right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_is_free(port: int, host: str = HOST) -> bool:
    """True when nothing listens on ``host:port`` and a server could bind it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        if probe.connect_ex((host, port)) == 0:
            return False
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Servers set SO_REUSEADDR too, so a port in TIME_WAIT counts as free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _ports_to_try(port: int | None) -> list[int]:
    """The requested port (checked now, with a clear error), or a few auto-picked ones."""
    if port is None:
        return [free_port() for _ in range(PORT_ATTEMPTS)]
    if not port_is_free(port):
        raise PortInUseError(f"port {port} on {HOST} is already in use: stop what uses it, or pass port=None "
                             "to let the helper pick a free port")
    return [port]


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log file ('' when it does not exist yet)."""
    try:
        text = Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _log_mentions(log_path: Path, pattern: str) -> bool:
    """Does the log of the latest start attempt (after the last marker) match ``pattern``?"""
    try:
        text = log_path.read_text(errors="replace")
    except FileNotFoundError:
        return False
    return re.search(pattern, text.rpartition(LOG_MARKER)[2]) is not None


def _with_log(message: str, log_path: Path) -> str:
    tail = log_tail(log_path)
    return f"{message}\nLast {LOG_TAIL_LINES} lines of {log_path}:\n{tail or '(empty log)'}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, but someone else's
        return True
    return True


def _sweep_stale_workdirs() -> None:
    """Remove temporary directories whose Python process died without cleaning up.

    A killed Jupyter kernel runs no ``finally``; its servers die with it (see
    :func:`_die_with_parent`), but their directories stay. Directories of live
    processes (another notebook, a parallel test worker) are left alone.
    """
    for workdir in Path(tempfile.gettempdir()).glob(f"{TEMP_PREFIX}*"):
        try:
            owner_pid = int((workdir / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue  # not ours, or still being set up
        if not _pid_alive(owner_pid):
            shutil.rmtree(workdir, ignore_errors=True)


@contextmanager
def _temp_workdir(kind: str, owner: pwd.struct_passwd | None = None) -> Iterator[Path]:
    """A fresh temporary directory, removed on exit whatever happened inside."""
    _sweep_stale_workdirs()
    workdir = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{kind}-"))
    _WORKDIRS.append(workdir)
    (workdir / OWNER_FILE).write_text(str(os.getpid()))
    try:
        if owner is not None:
            os.chown(workdir, owner.pw_uid, owner.pw_gid)
        yield workdir
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


# ---------------------------------------------------------------------------------------
# Starting, waiting, stopping
# ---------------------------------------------------------------------------------------


def _as_user(run_as: pwd.struct_passwd | None) -> dict[str, Any]:
    """subprocess arguments that run the child as ``run_as`` (nothing when None)."""
    if run_as is None:
        return {}
    return {"user": run_as.pw_uid, "group": run_as.pw_gid, "extra_groups": []}


def _die_with_parent(sig: int) -> Callable[[], None] | None:
    """Linux only: a preexec function asking the kernel to send ``sig`` to the server
    when this Python process dies, even by SIGKILL (a restarted Jupyter kernel).

    Strictly, the kernel watches the *thread* that started the server: start servers
    from the main thread (as notebooks and pytest do), not from a short-lived thread.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up now, not in the forked child
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig, signum = 1, int(sig)

    def set_parent_death_signal() -> None:
        prctl(pr_set_pdeathsig, signum, 0, 0, 0)

    return set_parent_death_signal


def _launch(name: str, argv: list[str], *, workdir: Path, log_path: Path, env: Mapping[str, str],
            cwd: Path, stop_signal: int, run_as: pwd.struct_passwd | None = None) -> subprocess.Popen:
    """Start ``argv`` in a new process group with its output appended to ``log_path``."""
    with open(log_path, "ab") as log:
        # A marker per attempt, so a retry on another port is not judged by the log
        # lines of the attempt before it.
        log.write(f"{LOG_MARKER} {' '.join(argv)}\n".encode())
        log.flush()
        # A process group of its own: stopping it reaches every worker the server forked,
        # and a Ctrl-C (KeyboardInterrupt) in the notebook does not hit the server directly.
        # (subprocess switches user before it calls preexec_fn, so the signal survives.)
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                cwd=cwd, env=dict(env), process_group=0,
                                preexec_fn=_die_with_parent(stop_signal),  # noqa: PLW1509 (one prctl call)
                                **_as_user(run_as))
    _STARTED.append(_Record(name=name, proc=proc, workdir=workdir, stop_signal=stop_signal))
    return proc


def _wait_until_ready(proc: subprocess.Popen, name: str, is_ready: Callable[[], bool], *,
                      log_path: Path, timeout: float, port_conflict: Callable[[], bool]) -> None:
    """Poll ``is_ready`` until it is True; raise with the log tail on exit or timeout."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            kind = _PortConflict if port_conflict() else ServerStartError
            raise kind(_with_log(f"{name} exited with code {proc.returncode} before it was ready.", log_path))
        if port_conflict():
            raise _PortConflict(_with_log(f"{name} found its port taken.", log_path))
        if is_ready():
            return
        if time.monotonic() > deadline:
            raise ServerStartError(_with_log(f"{name} was not ready after {timeout:.0f} s.", log_path))
        time.sleep(POLL_INTERVAL)


def _group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group ``pgid``."""
    proc_root = Path("/proc")
    if not proc_root.is_dir():  # macOS: no /proc, ask the kernel instead
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        except PermissionError:  # it exists, but belongs to someone else
            pass
        return [pgid]
    members = []
    for entry in proc_root.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # Fields after the ")" that closes the command name: state, ppid, pgrp, ...
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _stop(proc: subprocess.Popen, stop_signal: int, grace: float = STOP_GRACE) -> None:
    """Stop the server's whole process group: ``stop_signal``, then SIGKILL after ``grace``."""
    pgid = proc.pid  # process_group=0 made the server the leader of its own group
    if proc.poll() is None:
        _signal_group(pgid, stop_signal)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    # Kill whatever is left in the group, even when the leader exited by itself:
    # a forked worker outliving its parent would keep the port and the files.
    _signal_group(pgid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + grace
    while _group_members(pgid) and time.monotonic() < deadline:
        time.sleep(POLL_INTERVAL)


def _start_on_free_port(name: str, port: int | None, start: Callable[[int], subprocess.Popen],
                        ready: Callable[[subprocess.Popen, int], None], stop_signal: int) -> tuple[subprocess.Popen, int]:
    """Start a server with ``start(port)`` and wait with ``ready``; retry other ports on a race."""
    error: ServerStartError | None = None
    for candidate in _ports_to_try(port):
        proc = start(candidate)
        try:
            ready(proc, candidate)
            return proc, candidate
        except BaseException as exc:  # also KeyboardInterrupt: never leave a half-started server
            _stop(proc, stop_signal)
            if not isinstance(exc, _PortConflict):
                raise
            error = exc
    if port is not None:
        raise PortInUseError(f"port {port} was taken while {name} started.\n{error}")
    raise ServerStartError(f"{name} found no free port after {PORT_ATTEMPTS} tries.\n{error}")


def leftover_server_processes() -> list[str]:
    """Servers or temporary directories started by this module that still exist.

    An empty list means everything was cleaned up. Each entry says what is left.
    """
    leftovers = []
    for record in _STARTED:
        alive = _group_members(record.pid)
        if alive:
            leftovers.append(f"{record.name}: process group {record.pid} still has processes {alive}")
    leftovers += [f"temporary directory {workdir} still exists" for workdir in _WORKDIRS if workdir.exists()]
    return leftovers


def stray_servers_on_this_machine() -> list[str]:
    """Course servers and temp directories left by ANY process on this machine.

    :func:`leftover_server_processes` knows only this process's servers; this scans
    ``/proc`` and the temp folder, so a test run can prove that the notebooks' kernels
    (other processes) stopped theirs too.
    """
    found = [f"temporary directory {d}" for d in sorted(Path(tempfile.gettempdir()).glob(f"{TEMP_PREFIX}*"))]
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue  # exited meanwhile, or not ours to read
        if TEMP_PREFIX in cmdline or TEMP_PREFIX in cwd:
            found.append(f"process {proc.name}: {cmdline.strip()[:120]}")
    return found


@atexit.register
def _stop_leftovers_at_exit() -> None:
    """Last resort when a ``with`` never finished (e.g. ``__enter__`` called by hand)."""
    for record in _STARTED:
        # Only servers whose leader we have not reaped yet: a reaped pid may by now
        # belong to an unrelated process, which we must never signal.
        if record.proc.poll() is None:
            _stop(record.proc, record.stop_signal, grace=5.0)
    for workdir in _WORKDIRS:
        shutil.rmtree(workdir, ignore_errors=True)


# ---------------------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------------------


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
                                  cwd=workdir, env=_postgres_env(), timeout=timeout, **_as_user(run_as))
        except subprocess.TimeoutExpired:
            raise ServerStartError(_with_log(f"initdb did not finish within {timeout:.0f} s.", log_path)) from None
    if done.returncode != 0:
        raise ServerStartError(_with_log(f"initdb failed with code {done.returncode}.", log_path))


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
    :class:`PortInUseError`. Unix sockets live in the temporary directory too.
    """
    run_as = _postgres_user()
    bin_dir = find_postgres_bin_dir(run_as)
    with _temp_workdir("postgres", owner=run_as) as workdir:
        data_dir, log_path = workdir / "data", workdir / "server.log"
        began = time.monotonic()
        _initdb(bin_dir, data_dir, workdir=workdir, log_path=log_path, run_as=run_as, timeout=startup_timeout)

        def start(candidate: int) -> subprocess.Popen:
            argv = [str(bin_dir / "postgres"), "-D", str(data_dir), "-p", str(candidate),
                    "-c", f"listen_addresses={HOST}", "-c", f"unix_socket_directories={workdir}"]
            return _launch("postgres", argv, workdir=workdir, log_path=log_path, env=_postgres_env(),
                           cwd=workdir, stop_signal=POSTGRES_STOP_SIGNAL, run_as=run_as)

        def ready(proc: subprocess.Popen, candidate: int) -> None:
            _wait_until_ready(proc, "PostgreSQL", lambda: _postgres_ready(data_dir, candidate),
                              log_path=log_path, timeout=startup_timeout,
                              port_conflict=lambda: _log_mentions(log_path, r"could not bind .*Address already in use"))

        proc, bound = _start_on_free_port("PostgreSQL", port, start, ready, POSTGRES_STOP_SIGNAL)
        try:
            yield RunningServer(name="postgres", url=f"postgresql://postgres@{HOST}:{bound}/postgres", host=HOST,
                                port=bound, pid=proc.pid, workdir=workdir, log_path=log_path,
                                started_in=time.monotonic() - began)
        finally:
            _stop(proc, POSTGRES_STOP_SIGNAL)


# ---------------------------------------------------------------------------------------
# Agent Server (`langgraph dev`)
# ---------------------------------------------------------------------------------------


def _check_langgraph_cli() -> None:
    for module in LANGGRAPH_CLI_MODULES:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise ServerNotInstalledError(f"the Agent Server needs the Python package '{module}', which is not "
                                          f"installed in {sys.executable}. {AGENT_SERVER_INSTALL_HINT}")


def _absolute_spec(spec: Any, base: Path) -> Any:
    """Make a file-path graph spec ('./graphs.py:graph') absolute; module specs stay."""
    if isinstance(spec, dict):
        return {**spec, "path": _absolute_spec(spec["path"], base)} if "path" in spec else spec
    location, sep, variable = str(spec).rpartition(":")
    if sep and "/" in location:  # langgraph's own rule: a '/' means a file path, else a module
        return f"{(base / location).resolve()}:{variable}"
    return spec


def agent_config(graph_spec: str | Mapping[str, Any], base: Path) -> dict[str, Any]:
    """The langgraph.json content for ``graph_spec``.

    ``graph_spec`` is one of:
    - ``"module.path:variable"`` or ``"path/to/file.py:variable"``: one graph, named
      after the variable;
    - a mapping of graph names to such specs (``{"approval": "helpers.agent_graphs:approval_graph"}``);
    - a whole langgraph.json mapping (it has a ``"graphs"`` key).
    Relative file paths are resolved against ``base``.
    """
    if isinstance(graph_spec, str):
        config: dict[str, Any] = {"graphs": {graph_spec.rpartition(":")[2] or "graph": graph_spec}}
    elif "graphs" in graph_spec:
        config = dict(graph_spec)
    else:
        config = {"graphs": dict(graph_spec)}
    config["graphs"] = {name: _absolute_spec(spec, base) for name, spec in config["graphs"].items()}
    # `langgraph dev` appends each dependency directory to sys.path. Listing `base` first
    # lets module specs import from there even when the course is not pip-installed.
    # The config file lives in a temporary directory, so relative entries become absolute.
    config["dependencies"] = [str(base), *(str((base / dep).resolve()) for dep in config.get("dependencies", []))]
    return config


def _agent_env(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SECRET_ENV_KEYS}
    env.update(OFFLINE_AGENT_ENV)
    env.update(extra or {})
    return env


def _http_ok(url: str) -> bool:
    """True when ``GET url`` answers 200. Proxies are bypassed: this is loopback."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=1.0) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def agent_server(graph_spec: str | Mapping[str, Any], *, cwd: str | Path | None = None, port: int | None = None,
                 env: Mapping[str, str] | None = None, startup_timeout: float = 60.0) -> Iterator[RunningServer]:
    """An in-memory Agent Server (``langgraph dev``) serving ``graph_spec``, stopped on exit.

    ``graph_spec``: see :func:`agent_config`. ``cwd`` is the directory that module names
    and relative file paths are resolved against (default: the current directory); the
    server itself runs in the temporary directory, so its ``.langgraph_api`` state files
    are deleted with it. ``env`` adds environment variables for the server. Yields a
    :class:`RunningServer` whose ``url`` is ``http://127.0.0.1:PORT``.
    """
    _check_langgraph_cli()
    base = Path(cwd or os.getcwd()).resolve()
    config = agent_config(graph_spec, base)
    began = time.monotonic()
    with _temp_workdir("agent") as workdir:
        config_path, log_path = workdir / "langgraph.json", workdir / "server.log"
        config_path.write_text(json.dumps(config, indent=2))
        server_env = _agent_env(env)

        def start(candidate: int) -> subprocess.Popen:
            # `python -m langgraph_cli` rather than the `langgraph` script: a Jupyter
            # kernel's PATH does not always include the virtualenv's bin directory.
            argv = [sys.executable, "-m", "langgraph_cli", "dev", "--no-browser", "--no-reload",
                    "--host", HOST, "--port", str(candidate), "--config", str(config_path)]
            return _launch("agent-server", argv, workdir=workdir, log_path=log_path, env=server_env, cwd=workdir,
                           stop_signal=signal.SIGTERM)

        def ready(proc: subprocess.Popen, candidate: int) -> None:
            # `langgraph dev` silently moves to another port when its port is taken;
            # we treat that as a conflict, so the URL we hand out is always the real one.
            _wait_until_ready(proc, "Agent Server", lambda: _http_ok(f"http://{HOST}:{candidate}/ok"),
                              log_path=log_path, timeout=startup_timeout,
                              port_conflict=lambda: _log_mentions(log_path, r"is already in use, using port"))

        proc, bound = _start_on_free_port("Agent Server", port, start, ready, signal.SIGTERM)
        try:
            yield RunningServer(name="agent-server", url=f"http://{HOST}:{bound}", host=HOST, port=bound,
                                pid=proc.pid, workdir=workdir, log_path=log_path,
                                started_in=time.monotonic() - began)
        finally:
            _stop(proc, signal.SIGTERM)
