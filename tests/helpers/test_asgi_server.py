"""Tests for helpers.servers.asgi: a real uvicorn process serving a tiny app, started and stopped.

The app is a module written into a temporary folder (``cwd``), as a learner's own app would
be: uvicorn imports it by name in its own process.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from helpers import servers
from helpers.servers import ServerStartError, asgi_server, leftover_server_processes, uvicorn_argv

APP = textwrap.dedent('''
    import asyncio
    from contextlib import asynccontextmanager
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    @asynccontextmanager
    async def lifespan(app):
        print("lifespan: open", flush=True)
        yield
        print("lifespan: closed", flush=True)

    async def health(request):
        return JSONResponse({"ok": True})

    async def forever(request):
        await asyncio.Event().wait()

    app = Starlette(routes=[Route("/health", health), Route("/forever", forever)], lifespan=lifespan)
''')


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    (tmp_path / "tiny_app.py").write_text(APP)
    return tmp_path


def test_argv_runs_uvicorn_with_a_lifespan_on_loopback() -> None:
    argv = uvicorn_argv("pkg.mod:app", 8123, graceful_timeout=2)
    assert argv[:3] == [sys.executable, "-m", "uvicorn"]
    assert argv[argv.index("--host") + 1] == "127.0.0.1" and argv[argv.index("--port") + 1] == "8123"
    assert argv[argv.index("--lifespan") + 1] == "on"
    assert argv[argv.index("--timeout-graceful-shutdown") + 1] == "2"
    assert "--workers" not in argv and uvicorn_argv("m:a", 1, graceful_timeout=1, workers=2)[-2:] == ["--workers", "2"]


def test_serves_the_app_then_shuts_down_gracefully_and_leaves_nothing(app_dir: Path, tmp_path: Path) -> None:
    kept = tmp_path / "kept.log"
    with asgi_server("tiny_app:app", cwd=app_dir, graceful_timeout=1, keep_log=kept) as web:
        assert web.url == f"http://127.0.0.1:{web.port}"
        assert httpx.get(f"{web.url}/health").json() == {"ok": True}
        assert "lifespan: open" in web.log_tail()
        with pytest.raises(httpx.ReadTimeout):  # a request that never finishes by itself
            httpx.get(f"{web.url}/forever", timeout=0.3)
        workdir, pid = web.workdir, web.pid
    assert servers.group_members(pid) == [] and not workdir.exists()
    assert not [line for line in leftover_server_processes() if str(workdir) in line]
    log = kept.read_text()
    assert log.index("Shutting down") < log.index("lifespan: closed")  # the lifespan closes after serving


def test_an_app_that_cannot_be_imported_fails_with_its_log(app_dir: Path) -> None:
    with pytest.raises(ServerStartError) as failure:
        with asgi_server("no_such_module:app", cwd=app_dir, startup_timeout=30):
            pass
    assert "no_such_module" in str(failure.value)
    assert leftover_server_processes() == []
