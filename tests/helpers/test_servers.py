"""Tests for helpers.servers: real PostgreSQL and Agent Server processes, started and stopped.

Two servers (one of each) are shared by the tests that only use them; the tests about
stopping, failures and cleanup start their own. A module fixture checks at the very end
that nothing this module started is still running or still on disk.
"""

from __future__ import annotations

import json
import os
import pwd
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.types import Command
from langgraph_sdk import get_sync_client

from course.layout import ROOT
from course.run_processes import processes_of_run, stray_servers_on_this_machine
from helpers import servers
from helpers.agent_graphs import GRAPHS
from helpers.approval_workflow import build_approval_workflow
from helpers.servers import (
    PortInUseError,
    RunningServer,
    ServerNotInstalledError,
    ServerStartError,
    agent_server,
    leftover_server_processes,
    postgres_server,
    running,
)
from helpers.servers import agent as agent_module
from helpers.servers import postgres as postgres_module

SERVERS = {
    "postgres": lambda **kw: postgres_server(**kw),
    "agent": lambda **kw: agent_server(GRAPHS, **kw),
}


@pytest.fixture(scope="module")
def no_leftovers() -> Iterator[None]:
    """Torn down last (the shared servers depend on it): nothing may be left behind."""
    yield
    assert leftover_server_processes() == []


@pytest.fixture(scope="module")
def pg(no_leftovers: None) -> Iterator[RunningServer]:
    with postgres_server() as server:
        yield server


@pytest.fixture(scope="module")
def api(no_leftovers: None) -> Iterator[RunningServer]:
    with agent_server(GRAPHS) as server:
        yield server


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port with a listening socket on it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((servers.HOST, 0))
        sock.listen()
        yield sock.getsockname()[1]


def assert_gone(server: RunningServer) -> None:
    """The server's processes and its temporary directory are gone, so its port is released.

    (The port itself is not checked: on a busy machine another process may bind it the
    moment it is free.)
    """
    assert servers.group_members(server.pid) == []
    assert not server.workdir.exists()
    assert not [line for line in leftover_server_processes() if str(server.workdir) in line]


def process_uid(pid: int) -> int:
    """The real uid of a running process."""
    return psutil.Process(pid).uids().real


# --- PostgreSQL --------------------------------------------------------------------------


def test_postgres_url_points_at_a_working_server(pg: RunningServer) -> None:
    assert pg.url == f"postgresql://postgres@127.0.0.1:{pg.port}/postgres"
    with psycopg.connect(pg.url) as conn:
        conn.execute("CREATE TABLE notes (id serial PRIMARY KEY, body text)")
        conn.execute("INSERT INTO notes (body) VALUES ('kept')")
        assert conn.execute("SELECT body FROM notes").fetchall() == [("kept",)]
    assert (pg.workdir / "data" / "PG_VERSION").exists()
    assert "ready to accept connections" in pg.log_tail()


def test_postgres_runs_as_a_throwaway_cluster(pg: RunningServer) -> None:
    # Deleted on exit, so nothing must survive a power cut: commits do not wait for the disk.
    with psycopg.connect(pg.url) as conn:
        settings = {name: conn.execute(f"SHOW {name}").fetchone()[0]
                    for name in ("fsync", "synchronous_commit", "full_page_writes")}
    assert settings == {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
    assert servers.THROWAWAY_SETTINGS == tuple(f"{k}={v}" for k, v in settings.items())


def test_postgres_never_runs_as_root(pg: RunningServer) -> None:
    # PostgreSQL refuses root; as root (CI) the helper runs it as an unprivileged user.
    if os.geteuid() == 0:
        assert process_uid(pg.pid) == pwd.getpwnam(servers.UNPRIVILEGED_USER).pw_uid
    else:
        assert process_uid(pg.pid) == os.getuid()


def test_postgres_saver_keeps_an_interrupted_run(pg: RunningServer) -> None:
    with PostgresSaver.from_conn_string(pg.url) as saver:
        saver.setup()
        graph = build_approval_workflow(saver)
        config = {"configurable": {"thread_id": "approval-1"}}
        graph.invoke({"request": "PEK-SFO, 1 May"}, config)
        assert graph.get_state(config).next == ("approve",)
        final = graph.invoke(Command(resume="yes"), config)
    assert final["approved"] is True and final["analysis"] == "book Air B at 540 EUR (cheapest of 3)"


# --- Agent Server ------------------------------------------------------------------------


def test_agent_server_is_healthy_and_serves_the_course_graphs(api: RunningServer) -> None:
    assert api.url == f"http://127.0.0.1:{api.port}"
    with urllib.request.urlopen(f"{api.url}/ok", timeout=5) as response:
        assert json.load(response)["ok"] is True
    client = get_sync_client(url=api.url)
    assert {a["graph_id"] for a in client.assistants.search()} == set(GRAPHS)


def test_sdk_runs_chapter_07s_approval_workflow_to_the_interrupt_and_resumes(api: RunningServer) -> None:
    client = get_sync_client(url=api.url)
    thread_id = client.threads.create()["thread_id"]

    paused = client.runs.wait(thread_id, "approval", input={"request": "PEK-CDG, 1 May"})
    assert paused["__interrupt__"][0]["value"] == {"action": "approve_booking", "request": "PEK-CDG, 1 May",
                                                   "doc_count": 2}
    assert client.threads.get_state(thread_id)["next"] == ["approve"]
    assert client.threads.get(thread_id)["status"] == "interrupted"

    done = client.runs.wait(thread_id, "approval", command={"resume": "yes"})
    assert done == {"request": "PEK-CDG, 1 May", "documents": ["Air D: 480", "Air E: 455"], "approved": True,
                    "analysis": "book Air E at 455 EUR (cheapest of 2)"}
    assert client.threads.get(thread_id)["status"] == "idle"

    rejected = client.threads.create()["thread_id"]
    client.runs.wait(rejected, "approval", input={"request": "PEK-SFO"})
    done = client.runs.wait(rejected, "approval", command={"resume": "approve"})  # only "yes" approves
    assert done["approved"] is False and "analysis" not in done


def test_agent_server_serves_a_graph_file_relative_to_cwd(tmp_path: Path) -> None:
    (tmp_path / "graphs").mkdir()
    (tmp_path / "graphs" / "echo.py").write_text(
        "from langgraph.graph import StateGraph, START, END\n"
        "from typing import TypedDict\n"
        "class S(TypedDict):\n    text: str\n"
        "b = StateGraph(S)\n"
        "b.add_node('shout', lambda s: {'text': s['text'].upper()})\n"
        "b.add_edge(START, 'shout')\nb.add_edge('shout', END)\n"
        "echo = b.compile()\n")
    with agent_server("graphs/echo.py:echo", cwd=tmp_path) as server:
        client = get_sync_client(url=server.url)
        assert client.runs.wait(None, "echo", input={"text": "hi"}) == {"text": "HI"}
    assert_gone(server)


def test_agent_config_forms() -> None:
    base = Path("/course")
    assert servers.agent_config("helpers.agent_graphs:chat_graph", base)["graphs"] == {
        "chat_graph": "helpers.agent_graphs:chat_graph"}
    assert servers.agent_config({"g": "./graphs/g.py:graph"}, base)["graphs"] == {"g": "/course/graphs/g.py:graph"}
    full = servers.agent_config({"graphs": {"a": {"path": "a.py/../b.py:x"}}, "env": {"K": "v"},
                                 "dependencies": ["."]}, base)
    assert full["graphs"] == {"a": {"path": "/course/b.py:x"}} and full["env"] == {"K": "v"}
    assert full["dependencies"] == ["/course", "/course"]


# --- Stopping and cleanup ----------------------------------------------------------------


def test_server_stops_and_cleans_up(no_leftovers: None) -> None:
    # The Agent Server's normal stop is proven by test_agent_server_serves_a_graph_file_relative_to_cwd.
    with postgres_server() as server:
        assert servers.group_members(server.pid)
        assert server.workdir.is_dir() and server.log_path.is_file()
        assert any(str(server.workdir) in line for line in leftover_server_processes())
        # the machine-wide scan (used after a whole test run) sees it too
        during = stray_servers_on_this_machine()
        assert any(str(server.workdir) in line for line in during)
        assert any(line.startswith("process ") for line in during)
    assert_gone(server)
    assert not [line for line in stray_servers_on_this_machine() if str(server.workdir) in line]


@pytest.mark.parametrize("kind", sorted(SERVERS))
def test_server_cleans_up_when_the_body_raises(kind: str, no_leftovers: None) -> None:
    started: list[RunningServer] = []
    with pytest.raises(RuntimeError, match="boom"), SERVERS[kind]() as server:
        started.append(server)
        raise RuntimeError("boom")
    assert_gone(started[0])


# --- Ports -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(SERVERS))
def test_explicit_port_that_is_taken_raises_a_clear_error(kind: str, busy_port: int) -> None:
    expected = f"port {busy_port} on 127.0.0.1 is already in use"
    with pytest.raises(PortInUseError, match=expected), SERVERS[kind](port=busy_port):
        pytest.fail("must not start")


@pytest.mark.parametrize("kind", sorted(SERVERS))
def test_auto_picked_port_taken_meanwhile_moves_to_another_port(kind: str, busy_port: int,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # Simulate the race: the "free" port is grabbed before the server binds it.
    real_free_port = running.free_port
    ports = iter([busy_port])
    monkeypatch.setattr(running, "free_port", lambda host=servers.HOST: next(ports, None) or real_free_port(host))
    with SERVERS[kind]() as server:
        assert server.port != busy_port
        assert server.log_path.read_text().count(servers.LOG_MARKER) == 2
    assert_gone(server)


# --- Failures ----------------------------------------------------------------------------


def test_missing_postgres_binaries_say_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(servers.POSTGRES_BIN_ENV, raising=False)
    monkeypatch.setattr(postgres_module, "PGSERVER_PACKAGE", "no_such_pgserver_package")
    monkeypatch.setattr(postgres_module, "SYSTEM_POSTGRES_GLOBS", ("/nonexistent/postgresql/*/bin",))
    with pytest.raises(ServerNotInstalledError) as info, postgres_server():
        pytest.fail("must not start")
    assert "pip install -r requirements.txt" in str(info.value)
    assert "apt-get install postgresql" in str(info.value)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root hands PostgreSQL to an unprivileged user")
def test_as_root_binaries_the_unprivileged_user_cannot_reach_are_skipped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hidden = tmp_path / "private" / "bin"  # a 0700 parent, like a virtualenv under /root
    hidden.mkdir(parents=True)
    for name in ("initdb", "postgres"):
        (hidden / name).write_text("#!/bin/sh\n")
        (hidden / name).chmod(0o755)
    (tmp_path / "private").chmod(0o700)
    monkeypatch.setenv(servers.POSTGRES_BIN_ENV, str(hidden))
    monkeypatch.setattr(postgres_module, "PGSERVER_PACKAGE", "no_such_pgserver_package")
    monkeypatch.setattr(postgres_module, "SYSTEM_POSTGRES_GLOBS", ("/nonexistent/postgresql/*/bin",))
    nobody = postgres_module._postgres_user()
    with pytest.raises(ServerNotInstalledError, match="cannot be run by user 'nobody'"):
        servers.find_postgres_bin_dir(nobody)
    # With a reachable copy elsewhere (here: the system's or pgserver's), that one is used.
    monkeypatch.undo()
    monkeypatch.setenv(servers.POSTGRES_BIN_ENV, str(hidden))
    assert servers.find_postgres_bin_dir(nobody) != hidden


def test_missing_langgraph_cli_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agent_module, "LANGGRAPH_CLI_MODULES", ("no_such_langgraph_cli",))
    with pytest.raises(ServerNotInstalledError, match=r"pip install -r requirements\.txt"), agent_server(GRAPHS):
        pytest.fail("must not start")


def assert_started_since_are_gone(count_before: int) -> None:
    """Every server launched after ``count_before`` launches has no process and no directory."""
    records = servers.STARTED[count_before:]
    assert records, "expected the helper to have launched a server"
    for record in records:
        assert servers.group_members(record.pid) == []
        assert not record.workdir.exists()


def test_server_that_exits_early_reports_its_log(no_leftovers: None) -> None:
    before = len(servers.STARTED)
    with pytest.raises(ServerStartError) as info, agent_server({"broken": "helpers.no_such_module:graph"}):
        pytest.fail("must not start")
    message = str(info.value)
    assert "exited with code" in message and "Last 20 lines of" in message
    assert "no_such_module" in message
    assert_started_since_are_gone(before)


def test_server_not_ready_in_time_is_stopped_and_reported(no_leftovers: None) -> None:
    before = len(servers.STARTED)
    expected = r"was not ready after 0 s\.\nLast 20 lines of .*server\.log"
    with pytest.raises(ServerStartError, match=expected), agent_server(GRAPHS, startup_timeout=0.0):
        pytest.fail("must not start")
    assert_started_since_are_gone(before)


def test_nothing_this_module_started_is_still_running_except_the_shared_servers(
        pg: RunningServer, api: RunningServer) -> None:
    shared = (str(pg.workdir), str(api.workdir), f"group {pg.pid} ", f"group {api.pid} ")
    assert [line for line in leftover_server_processes() if not any(s in line for s in shared)] == []


def test_a_killed_owner_s_server_is_stopped_by_its_watchdog_on_any_platform() -> None:
    # A restarted Jupyter kernel is SIGKILLed: no `finally` and no atexit runs in it. The
    # child switches Linux's parent-death signal off, so the watchdog alone must stop the
    # server and remove its directory, as it does on macOS.
    code = textwrap.dedent("""
        import json, time
        from helpers.servers import lifecycle, postgres_server
        lifecycle.PARENT_DEATH_SIGNAL = False
        with postgres_server() as pg:
            print(json.dumps([pg.pid, str(pg.workdir)]), flush=True)
            time.sleep(120)
    """)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             cwd=ROOT)
    try:
        pid, workdir = json.loads(child.stdout.readline())
        assert len(servers.group_members(pid)) >= 2  # the server and its watchdog
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    deadline = time.monotonic() + 15
    while (servers.group_members(pid) or Path(workdir).exists()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert servers.group_members(pid) == []
    assert not Path(workdir).exists()


def test_a_stale_directory_is_swept_and_a_live_owner_s_is_kept(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(running.tempfile, "gettempdir", lambda: str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale, live, foreign = (tmp_path / f"{servers.TEMP_PREFIX}{name}" for name in ("stale", "live", "foreign"))
    for folder in (stale, live, foreign):
        folder.mkdir()
    (stale / servers.OWNER_FILE).write_text(f"{dead.pid}\n0.0\n\n")
    running.write_owner(live)
    running._sweep_stale_workdirs()
    assert not stale.exists() and live.exists() and foreign.exists()  # no owner file: not ours to judge


def test_processes_of_a_run_are_told_apart_by_their_run_tag(pg: RunningServer) -> None:
    ours = os.environ[servers.RUN_ENV]  # set for the whole test session by conftest.py
    assert any(f"process {pg.pid}:" in line for line in processes_of_run(ours))
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             env={**os.environ, servers.RUN_ENV: "another-run"})
    try:
        assert not any(f"process {other.pid}:" in line for line in processes_of_run(ours))
        assert [line for line in processes_of_run("another-run") if f"process {other.pid}:" in line]
    finally:
        other.send_signal(signal.SIGKILL)
        other.wait()
    assert running.read_owner(pg.workdir) == running.owner_tag()  # this process, and this run
    assert running.read_owner(pg.workdir)["run"] == ours


def test_a_test_run_reports_only_what_it_left_behind(tmp_path: Path) -> None:
    # the root conftest.py's check at the end of every run, on a small run of its own.
    from course.owned_test_run import OwnedRun

    others = tmp_path / f"{servers.TEMP_PREFIX}another-clone"  # stands for another run's folder
    others.mkdir()
    outer = {key: os.environ.get(key) for key in ("TMPDIR", servers.RUN_ENV)}
    run = OwnedRun()
    try:
        assert os.environ[servers.RUN_ENV] == run.run_id and Path(tempfile.gettempdir()) == run.folder
        Path(tempfile.mkdtemp(prefix="course-99-"))  # a chapter that forgot its cleanup
        stray = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # inherits the run id
        foreign = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                                   env={**os.environ, servers.RUN_ENV: "another-run"})
        try:
            left = run.leftovers(grace=0.2)
        finally:
            for proc in (stray, foreign):
                proc.kill()
                proc.wait()
    finally:
        run.close()
    assert [line.split(" ", 2)[:2] for line in left] == [["temporary", "directory"], ["process", f"{stray.pid}:"]]
    assert left[0].startswith("temporary directory course-99-")
    assert not run.folder.exists() and others.exists()  # its own folder removed, nothing else touched
    assert {key: os.environ.get(key) for key in outer} == outer


def test_a_run_without_workers_does_not_count_its_own_resource_tracker(tmp_path: Path) -> None:
    # `pytest tests/helpers/test_ledger.py` (no xdist) once failed: the controller's own
    # multiprocessing resource tracker, alive until the controller exits, was counted as left behind.
    child = textwrap.dedent("""
        import multiprocessing, multiprocessing.resource_tracker, subprocess, sys
        from course.owned_test_run import OwnedRun
        run = OwnedRun()
        try:
            multiprocessing.resource_tracker.ensure_running()
            stray = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            try:
                left = run.leftovers(grace=0.2)
            finally:
                stray.kill()
                stray.wait()
        finally:
            run.close()
        print([line.split(":")[0] for line in left] == [f"process {stray.pid}"])
    """)
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "True", done.stdout + done.stderr
