"""Start real servers for a notebook or a test, and always stop them again.

Two context managers, used the same way::

    with postgres_server() as pg:          # a throwaway PostgreSQL cluster
        PostgresSaver.from_conn_string(pg.url)  # postgresql://postgres@127.0.0.1:PORT/postgres

    with agent_server(GRAPHS) as api:      # `langgraph dev` serving helpers.agent_graphs
        get_sync_client(url=api.url)       # http://127.0.0.1:PORT

Each one picks a free loopback port and a fresh temporary directory (with an owner file
naming the process and the run that made it), starts the server as a child process in
its own process group, and polls it until it answers (with a deadline: no fixed sleeps).
If it never gets ready, :class:`ServerStartError` carries the last lines of its log. On
the way out, also when the ``with`` body raises, the whole process group is stopped (a
polite signal, then SIGKILL after a grace period) and the temporary directory is
removed. When the owning process dies without getting there (a restarted Jupyter kernel
is SIGKILLed), a watchdog next to the server stops it and removes its directory.
:func:`leftover_server_processes` lists anything this process started that is still
there. (What a whole test run started is the run's own business: :mod:`course.run_processes`.)

The modules, one per part:

- :mod:`helpers.servers.running`: the server's description, ports, logs, owned temp dirs;
- :mod:`helpers.servers.lifecycle`: launching, waiting, stopping, finding leftovers;
- :mod:`helpers.servers.watchdog`: the standalone watchdog script;
- :mod:`helpers.servers.postgres`, :mod:`helpers.servers.agent` and :mod:`helpers.servers.asgi`
  (your own ASGI app on uvicorn, chapter 14): the servers.

POSIX only (Linux, macOS): it relies on process groups.
"""

from .agent import AGENT_SERVER_INSTALL_HINT, LANGGRAPH_CLI_MODULES, OFFLINE_AGENT_ENV, agent_config, agent_server
from .asgi import ASGI_STOP_SIGNAL, asgi_server, uvicorn_argv
from .lifecycle import STARTED, group_members, leftover_server_processes
from .postgres import (
    PGSERVER_PACKAGE,
    POSTGRES_BIN_ENV,
    POSTGRES_INSTALL_HINT,
    POSTGRES_STOP_SIGNAL,
    SYSTEM_POSTGRES_GLOBS,
    THROWAWAY_SETTINGS,
    UNPRIVILEGED_USER,
    find_postgres_bin_dir,
    postgres_server,
)
from .running import (
    HOST,
    INSTALL_HINT,
    LOG_MARKER,
    LOG_TAIL_LINES,
    OWNER_FILE,
    RUN_ENV,
    STOP_GRACE,
    TEMP_PREFIX,
    PortInUseError,
    RunningServer,
    ServerNotInstalledError,
    ServerStartError,
    free_port,
    log_tail,
    port_is_free,
)

__all__ = [
    "AGENT_SERVER_INSTALL_HINT", "ASGI_STOP_SIGNAL", "HOST", "INSTALL_HINT", "LANGGRAPH_CLI_MODULES", "LOG_MARKER",
    "LOG_TAIL_LINES",
    "OFFLINE_AGENT_ENV", "OWNER_FILE", "PGSERVER_PACKAGE", "POSTGRES_BIN_ENV", "POSTGRES_INSTALL_HINT",
    "POSTGRES_STOP_SIGNAL", "RUN_ENV", "STOP_GRACE", "SYSTEM_POSTGRES_GLOBS", "TEMP_PREFIX", "THROWAWAY_SETTINGS",
    "UNPRIVILEGED_USER",
    "PortInUseError", "RunningServer", "ServerNotInstalledError", "ServerStartError", "agent_config", "agent_server",
    "asgi_server", "uvicorn_argv",
    "find_postgres_bin_dir", "free_port", "leftover_server_processes", "log_tail", "port_is_free",
    "postgres_server", "STARTED", "group_members",
]
