"""Your own ASGI app (FastAPI, Starlette, ...) served by uvicorn on loopback, stopped on exit.

    with asgi_server("helpers.persistent_service:app", env={"SERVICE_DATABASE_URL": url}) as web:
        httpx.get(f"{web.url}/health")          # http://127.0.0.1:PORT

The app is imported *by the uvicorn process*, from a module: ``"package.module:variable"``
(uvicorn's own syntax). A function or class defined only in a notebook cell does not exist
in that process, which is why chapter 14 saves its app to ``helpers/`` before serving it.
``cwd`` (default: the current directory) is put first on the server's ``PYTHONPATH``, so
the module is found even when the course is not pip-installed.

Like the other servers of :mod:`helpers.servers`: a free port (retried on a race), a
temporary directory with the log, its own process group with a watchdog, readiness polled
with a deadline (``GET health_path`` answers 200 only after the app's lifespan startup has
finished), and on the way out SIGTERM: uvicorn's graceful shutdown (stop accepting, wait up
to ``graceful_timeout`` seconds for requests in flight, cancel the rest, run the lifespan's
shutdown), then SIGKILL for whatever is left after :data:`~helpers.servers.running.STOP_GRACE`.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from .agent import http_ok
from .lifecycle import launch_process, start_on_free_port, stop_launched, wait_until_ready
from .running import HOST, LaunchRecord, RunningServer, log_mentions, temp_workdir

# uvicorn's log line when its port was taken between our pick and its bind.
ASGI_PORT_TAKEN = r"error while attempting to bind on address"
ASGI_STOP_SIGNAL = signal.SIGTERM  # uvicorn's graceful shutdown (SIGINT does the same)


def uvicorn_argv(app_spec: str, port: int, *, graceful_timeout: int, workers: int = 1) -> list[str]:
    """The command line that serves ``app_spec`` on ``127.0.0.1:port``.

    ``--lifespan on``: a failing lifespan startup stops the server instead of serving
    without its database. No access log: the log holds what the app itself prints.
    """
    argv = [sys.executable, "-m", "uvicorn", app_spec, "--host", HOST, "--port", str(port),
            "--lifespan", "on", "--no-access-log", "--timeout-graceful-shutdown", str(int(graceful_timeout))]
    if workers != 1:
        argv += ["--workers", str(workers)]
    return argv


@contextmanager
def asgi_server(app_spec: str, *, env: Mapping[str, str] | None = None, cwd: str | Path | None = None,
                port: int | None = None, health_path: str = "/health", graceful_timeout: int = 5,
                workers: int = 1, startup_timeout: float = 60.0,
                keep_log: str | Path | None = None) -> Iterator[RunningServer]:
    """uvicorn serving ``app_spec`` (``"module:variable"``) on a free loopback port; stopped on exit.

    ``env`` adds environment variables for the server process (the app reads its settings
    there). The temporary directory goes when the server stops; ``keep_log`` is a path
    that receives a copy of the log first (what the server printed while it shut down).
    Yields a :class:`RunningServer` whose ``url`` is ``http://127.0.0.1:PORT`` and whose
    ``log_path`` holds uvicorn's and the app's output.
    """
    base = Path(cwd or os.getcwd()).resolve()
    began = time.monotonic()
    with temp_workdir("asgi") as workdir:
        log_path = workdir / "server.log"
        server_env = dict(os.environ)
        server_env["PYTHONPATH"] = os.pathsep.join([str(base), *filter(None, [os.environ.get("PYTHONPATH")])])
        server_env["PYTHONUNBUFFERED"] = "1"
        server_env.update(env or {})

        def start(candidate: int) -> LaunchRecord:
            argv = uvicorn_argv(app_spec, candidate, graceful_timeout=graceful_timeout, workers=workers)
            return launch_process("asgi", argv, workdir=workdir, log_path=log_path, env=server_env, cwd=workdir,
                           stop_signal=ASGI_STOP_SIGNAL)

        def ready(proc: subprocess.Popen, candidate: int) -> None:
            wait_until_ready(proc, "uvicorn", lambda: http_ok(f"http://{HOST}:{candidate}{health_path}"),
                              log_path=log_path, timeout=startup_timeout,
                              port_conflict=lambda: log_mentions(log_path, ASGI_PORT_TAKEN))

        record, bound = start_on_free_port("uvicorn", port, start, ready)
        try:
            yield RunningServer(name="asgi", url=f"http://{HOST}:{bound}", host=HOST, port=bound, pid=record.pid,
                                workdir=workdir, log_path=log_path, started_in=time.monotonic() - began)
        finally:
            stop_launched(record)
            if keep_log is not None:
                shutil.copyfile(log_path, keep_log)
