"""An in-memory Agent Server (``langgraph dev``) on loopback, serving graphs of the course or your own."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .lifecycle import launch_process, start_on_free_port, stop_launched, wait_until_ready
from .running import (
    HOST,
    INSTALL_HINT,
    LaunchRecord,
    RunningServer,
    ServerNotInstalledError,
    log_mentions,
    temp_workdir,
)

LANGGRAPH_CLI_MODULES = ("langgraph_cli", "langgraph_api")  # `langgraph dev` needs both ([inmem] extra)
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
# In the log: the port was taken by someone else (langgraph's own notice, or uvicorn's bind error).
PORT_TAKEN = r"is already in use, using port|error while attempting to bind on address"
SECRET_ENV_KEYS = ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT")


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


def http_ok(url: str) -> bool:
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
    with temp_workdir("agent") as workdir:
        config_path, log_path = workdir / "langgraph.json", workdir / "server.log"
        config_path.write_text(json.dumps(config, indent=2))
        server_env = _agent_env(env)

        def start(candidate: int) -> LaunchRecord:
            # `python -m langgraph_cli` rather than the `langgraph` script: a Jupyter
            # kernel's PATH does not always include the virtualenv's bin directory.
            argv = [sys.executable, "-m", "langgraph_cli", "dev", "--no-browser", "--no-reload",
                    "--host", HOST, "--port", str(candidate), "--config", str(config_path)]
            return launch_process("agent-server", argv, workdir=workdir, log_path=log_path, env=server_env, cwd=workdir,
                           stop_signal=signal.SIGTERM)

        def ready(proc: subprocess.Popen, candidate: int) -> None:
            # `langgraph dev` silently moves to another port when its port is taken at
            # start; we treat that as a conflict, so the URL we hand out is always the
            # real one. A port taken later, while the app starts, makes uvicorn exit.
            wait_until_ready(proc, "Agent Server", lambda: http_ok(f"http://{HOST}:{candidate}/ok"),
                              log_path=log_path, timeout=startup_timeout,
                              port_conflict=lambda: log_mentions(log_path, PORT_TAKEN))

        record, bound = start_on_free_port("Agent Server", port, start, ready)
        try:
            yield RunningServer(name="agent-server", url=f"http://{HOST}:{bound}", host=HOST, port=bound,
                                pid=record.pid, workdir=workdir, log_path=log_path,
                                started_in=time.monotonic() - began)
        finally:
            stop_launched(record)
