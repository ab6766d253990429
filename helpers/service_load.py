"""Load on chapter 14's service: N concurrent HTTP clients, latency percentiles, checkpoints per second.

A harness, not the lesson: chapter 14 calls :func:`measure_load` for each set-up and
client count, prints stable facts from the rows (counts, orderings, ratio bands) and
shows the raw numbers in a table and a plot (:func:`plot_load`). ``course.bench`` runs the
same measurement (:func:`benchmark_service`).

Each client sends its turns one after the other on a thread of its own, so a per-thread
lock never makes one client wait for another: what the clients share is the server, its
saver and the database. One turn of chapter 01's assistant writes 3 checkpoints.
"""

from __future__ import annotations

import asyncio
import math
import platform
import statistics
import time
from collections.abc import Iterable, Sequence
from typing import Any

import httpx
import psutil

CHECKPOINTS_PER_TURN = 3  # input, after __start__, after reply
TEXTS = ("I'd like a window seat, please.", "Where did I say I want to sit?")


def percentile(values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile (nearest rank, e.g. 0.95 for p95) of ``values``."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    rank = min(len(ordered), max(1, math.ceil(fraction * len(ordered))))
    return ordered[rank - 1]


async def measure_load(client: httpx.AsyncClient, setup: str, clients: int, requests: int,
                       prefix: str) -> dict[str, Any]:
    """``requests`` turns in all, from ``clients`` concurrent clients, against ``/{setup}/...``.

    Returns one row: set-up, clients, requests, failures, median and p95 latency (ms) and
    checkpoints written per second over the wall time of the whole batch.
    """
    if clients < 1 or requests < clients:
        raise ValueError("need 1 <= clients <= requests")
    latencies: list[float] = []
    failures = 0

    async def one_client(index: int, turns: int) -> None:
        nonlocal failures
        for turn in range(turns):
            began = time.perf_counter()
            response = await client.post(f"/{setup}/threads/{prefix}-{setup}-{clients}-{index}/messages",
                                         json={"text": TEXTS[turn % len(TEXTS)]})
            latencies.append(time.perf_counter() - began)
            failures += response.status_code != 200

    share, extra = divmod(requests, clients)
    began = time.perf_counter()
    await asyncio.gather(*(one_client(i, share + (i < extra)) for i in range(clients)))
    wall = time.perf_counter() - began
    ok = len(latencies) - failures
    return {"setup": setup, "clients": clients, "requests": len(latencies), "failures": failures,
            "median ms": 1000 * statistics.median(latencies), "p95 ms": 1000 * percentile(latencies, 0.95),
            "checkpoints/s": CHECKPOINTS_PER_TURN * ok / wall}


async def measure_all(base_url: str, setups: Iterable[str], client_counts: Iterable[int], min_requests: int = 8,
                      prefix: str = "load") -> list[dict[str, Any]]:
    """:func:`measure_load` for every set-up and client count, one HTTP client with enough connections.

    Each row sends ``max(min_requests, clients)`` requests: one per client at least.
    """
    counts = list(client_counts)
    # Idle connections are dropped after 1 s, before uvicorn closes them (5 s): a request never
    # goes out on a connection the server is closing at that moment.
    limits = httpx.Limits(max_connections=max(counts), max_keepalive_connections=max(counts), keepalive_expiry=1)
    rows = []
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as client:
        for setup in setups:
            for clients in counts:
                rows.append(await measure_load(client, setup, clients, max(min_requests, clients), prefix))
    return rows


def row(rows: Iterable[dict[str, Any]], setup: str, clients: int) -> dict[str, Any]:
    """The row of ``setup`` at ``clients`` clients."""
    return next(r for r in rows if r["setup"] == setup and r["clients"] == clients)


def machine() -> str:
    """One line naming the machine the numbers come from: CPUs, architecture, OS, Python."""
    return (f"{psutil.cpu_count()} CPUs ({platform.machine()}), {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}")


def rounded(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with numbers rounded for a table."""
    return [{k: (round(v, 1) if isinstance(v, float) else v) for k, v in r.items()} for r in rows]


def plot_load(rows: Sequence[dict[str, Any]]) -> Any:
    """Median and p95 latency, and checkpoints/s, against the client count, one line per set-up."""
    import matplotlib.pyplot as plt

    figure, (latency, throughput) = plt.subplots(1, 2, figsize=(10, 3.5))
    for setup in dict.fromkeys(r["setup"] for r in rows):
        mine = [r for r in rows if r["setup"] == setup]
        counts = [r["clients"] for r in mine]
        (line,) = latency.plot(counts, [r["p95 ms"] for r in mine], marker="o", label=f"{setup} p95")
        latency.plot(counts, [r["median ms"] for r in mine], marker=".", linestyle="--", color=line.get_color(),
                     label=f"{setup} median")
        throughput.plot(counts, [r["checkpoints/s"] for r in mine], marker="o", label=setup)
    for axis, title in ((latency, "request latency (ms)"), (throughput, "checkpoints written per second")):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("concurrent clients")
        axis.set_title(title)
        axis.legend(fontsize=7)
    figure.tight_layout()
    return figure


def benchmark_service(min_requests: int = 8, client_counts: Sequence[int] = (1, 8, 32),
                      setups: Sequence[str] = ("single", "pool", "serialized")) -> list[dict[str, Any]]:
    """Start PostgreSQL and the service, measure every set-up, stop both (``course.bench``)."""
    from . import servers
    from .persistent_service import DATABASE_URL_ENV

    with servers.postgres_server() as pg, servers.asgi_server(
            "helpers.persistent_service:app", env={DATABASE_URL_ENV: pg.url}) as web:
        return asyncio.run(measure_all(web.url, setups, client_counts, min_requests, prefix="bench"))
