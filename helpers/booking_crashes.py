"""Chapter 06's real crashes: the shown graphs run in forked children that die inside a node.

:func:`lost_write_trials` crashes the seat/fare step (does a finished sibling's pending
write survive?); :func:`booking_crash_trials` crashes a booking right after the stand-in
airline booked (does an idempotency key come back the same on resume?). The child runs a
graph from :mod:`helpers.fare_lookup_graphs` on a SQLite file and dies with ``os._exit``;
this process then reads the file and resumes. The child is a fork of the notebook's
kernel (:func:`fork_child`): that costs milliseconds (a fresh interpreter would import
LangGraph again, about a second) and passes the chapter's functions to the child as they
are, the learner's idempotency key included, which no other interpreter could import. It
needs ``os.fork`` (Linux, macOS, WSL, Binder) and says so when it is missing.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.runtime import ExecutionInfo
from langgraph.types import Durability

from .counting_saver import CountingSaver
from .fare_lookup_graphs import (
    CRASH_EXIT_CODE,
    Airline,
    BookState,
    FlakyDesk,
    build_booking_graph,
    build_lookup_graph,
    run_until_failure,
)

# -- crashes in forked child processes ----------------------------------------------------

MODES: tuple[Durability, ...] = ("sync", "async", "exit")
CRASH_CONFIG: RunnableConfig = {"configurable": {"thread_id": "crash-1"}}
CRASH_ROUTE = {"route": "PEK-SFO"}


class SlowSaver(CountingSaver):
    """A saver that takes ``put_delay`` seconds per checkpoint and ``writes_delay`` per write.

    Stands in for a remote database, so that "did this reach the database before the
    crash?" does not depend on a race with a local disk.
    """

    def __init__(self, inner: BaseCheckpointSaver, put_delay: float = 0.0, writes_delay: float = 0.0) -> None:
        super().__init__(inner)
        self.put_delay = put_delay
        self.writes_delay = writes_delay

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        time.sleep(self.put_delay)  # simulated database latency, not synchronisation
        return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        time.sleep(self.writes_delay)  # simulated database latency, not synchronisation
        super().put_writes(config, writes, task_id, task_path)


def open_sqlite_saver(db_path: str | Path) -> SqliteSaver:
    """A SqliteSaver on a file, for the crash experiments.

    ``check_same_thread=False``: the saver writes from a worker thread. ``synchronous=OFF``:
    a commit returns once the operating system has the data, without waiting for the disk.
    That keeps every write a *process* crash could lose or keep exactly as it is (the OS
    still has it after ``os._exit``; only a power cut could lose it) and saves the ~7 ms
    disk flush per commit.
    """
    conn = sqlite3.connect(str(db_path), check_same_thread=False)
    conn.execute("PRAGMA synchronous=OFF")
    return SqliteSaver(conn)


def fork_child(target: Callable[..., None], *args: Any, log_path: str | Path) -> int:
    """Start ``target(*args)`` in a child forked from this very process (the notebook's kernel); its pid.

    Why a fork of the kernel, and not :class:`helpers.preloaded_processes.ProcessServer`
    (chapters 08, 10, 11 and 12) or a fresh interpreter: the targets get functions defined in the
    notebook, the learner's ``idempotency_key`` of exercise 06.3 among them. Such a
    function exists only in the kernel's memory; it cannot be imported by, or sent as JSON
    to, another interpreter, and a fork copies it as it is. So this needs ``os.fork``
    (Linux, macOS, WSL, Binder) and raises RuntimeError without it. The child only runs
    ``target`` and ends: the kernel's other threads do not exist in it. A child whose
    target is importable (chapters 01, 07 and exercise 10.4's check) uses
    :func:`helpers.kernel_forks.run_forked` instead, which also runs without ``os.fork``.

    The child's stdout and stderr go to ``log_path``; it ends with ``os._exit`` (0 when
    ``target`` returns, 1 when it raises), so it never runs this process's cleanup.
    """
    if not hasattr(os, "fork"):
        raise RuntimeError("the crash experiments need os.fork (Linux, macOS, WSL or Binder)")
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            log = open(log_path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - closed by os._exit
            sys.stdout = sys.stderr = log  # the kernel's streams belong to the parent
            target(*args)
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    return pid


def wait_child(pid: int, log_path: str | Path, expected: int = CRASH_EXIT_CODE) -> int:
    """Wait for a forked child; raise with its log when it did not exit with ``expected``."""
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if code != expected:
        path = Path(log_path)
        tail = path.read_text(encoding="utf-8")[-1500:] if path.exists() else ""
        raise RuntimeError(f"the child exited with {code}, expected {expected}:\n{tail}")
    return code


def _durability(mode: Durability | None) -> dict[str, Any]:
    return {} if mode is None else {"durability": mode}


def _trial_folders(workdir: str | Path, name: str, modes: Sequence[Durability | None],
                   trials: int) -> list[tuple[Durability | None, Path]]:
    """A new, empty folder per mode and trial: ``workdir/<name>-<mode or 'default'>-<trial>``."""
    folders = []
    for mode in modes:
        for trial in range(trials):
            folder = Path(workdir) / f"{name}-{mode or 'default'}-{trial}"
            folder.mkdir()
            folders.append((mode, folder))
    return folders


def _crash_lookups(db_path: Path, mode: Durability | None, writes_delay: float) -> None:
    desk = FlakyDesk(crash=True)  # quote_fare kills the process once the seat write was handed over
    saver = SlowSaver(open_sqlite_saver(db_path), writes_delay=writes_delay)
    graph = build_lookup_graph(saver, desk.find_seat, desk.quote_fare)
    run_until_failure(graph, CRASH_ROUTE, CRASH_CONFIG, desk, durability=mode)
    raise RuntimeError("unreachable: the fare lookup should have ended this process")


def lost_write_trials(workdir: str | Path, modes: Sequence[Durability] = MODES, trials: int = 3,
                      writes_delay: float = 1.0) -> list[dict[str, Any]]:
    """Crash the seat/fare step in forked children; report what survived and what re-ran.

    In each child (all running at once) the fare lookup calls ``os._exit`` right after the
    runtime has handed the seat lookup's finished write to the saver, a SQLite file whose
    writes take ``writes_delay`` seconds. This process then counts the ``seat`` rows in
    the file's ``writes`` table and resumes the thread (``invoke(None)``, or the same
    input again when no checkpoint was saved), counting the lookups that run. One row per
    mode: ``trials``, ``seat write on disk``, ``seat re-ran``, ``fare re-ran`` (each a
    count out of ``trials``).
    """
    jobs = [(mode, folder, fork_child(_crash_lookups, folder / "trip.db", mode, writes_delay,
                                      log_path=folder / "child.log"))
            for mode, folder in _trial_folders(workdir, "lost-write", modes, trials)]
    rows = {mode: {"mode": mode, "trials": trials, "seat write on disk": 0, "seat re-ran": 0, "fare re-ran": 0}
            for mode in modes}
    for mode, folder, pid in jobs:
        wait_child(pid, folder / "child.log")
        db = folder / "trip.db"
        with closing(sqlite3.connect(db)) as conn:
            tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            seat_rows = conn.execute("SELECT count(*) FROM writes WHERE channel = 'seat'").fetchone()[0] \
                if "writes" in tables else 0
        desk = FlakyDesk(failures={})
        saver = open_sqlite_saver(db)
        with closing(saver.conn):
            graph = build_lookup_graph(saver, desk.find_seat, desk.quote_fare)
            saved = saver.get_tuple(CRASH_CONFIG) is not None
            graph.invoke(None if saved else CRASH_ROUTE, CRASH_CONFIG, **_durability(mode))
        row = rows[mode]
        row["seat write on disk"] += seat_rows > 0
        row["seat re-ran"] += desk.calls["find_seat"] > 0
        row["fare re-ran"] += desk.calls["quote_fare"] > 0
    return [rows[mode] for mode in modes]


BOOKING_CONFIG: RunnableConfig = {"configurable": {"thread_id": "booking-crash"}}
INFO_FIELDS = ("checkpoint_id", "checkpoint_ns", "task_id", "thread_id", "run_id", "node_attempt",
               "node_first_attempt_time")


def recording_key(key: Callable[[BookState, ExecutionInfo], str],
                  log_path: str | Path) -> Callable[[BookState, ExecutionInfo], str]:
    """Wrap an idempotency-key function so that every call is logged to ``log_path``.

    Each call appends one JSON line with the execution info's fields and the key, before
    the booking is made; the file outlives a crash.
    """

    def logged(state: BookState, info: ExecutionInfo) -> str:
        value = key(state, info)
        entry = {"info": {name: getattr(info, name) for name in INFO_FIELDS}, "key": value}
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(json.dumps(entry, default=str) + "\n")
        return value

    return logged


def _crash_booking(folder: Path, request: BookState, mode: Durability | None,
                   key: Callable[[BookState, ExecutionInfo], str], put_delay: float) -> None:
    saver = SlowSaver(open_sqlite_saver(folder / "booking.db"), put_delay=put_delay, writes_delay=put_delay)
    airline = Airline(folder / "airline.jsonl", crash_after_booking=True)
    graph = build_booking_graph(saver, airline.book, recording_key(key, folder / "keys.jsonl"))
    graph.invoke(request, {**BOOKING_CONFIG, "run_id": uuid.uuid4()}, **_durability(mode))
    raise RuntimeError("unreachable: the airline should have ended this process")


def booking_crash_trials(workdir: str | Path, key: Callable[[BookState, ExecutionInfo], str],
                         request: BookState, modes: Sequence[Durability | None] = MODES, trials: int = 3,
                         put_delay: float = 0.2) -> list[dict[str, Any]]:
    """Book in forked children that crash right after the airline booked; resume here.

    Each child (all running at once) runs :func:`build_booking_graph` with ``key`` on a
    SQLite file whose writes take ``put_delay`` seconds, under durability ``mode`` (None:
    the default), and every invoke gets its own ``run_id`` (as a server gives every run).
    The airline (a file) books, then kills the child. This process resumes each thread:
    ``invoke(None)`` when a checkpoint was saved, otherwise the same ``request`` (the same command) again, as
    a client retry would.

    Returns one dict per trial: ``mode``, ``step saved`` (the checkpoint that planned
    ``book_seat`` reached the file), ``resumed with``, ``attempts`` (the execution info
    and key of the crashed call and of the resumed one) and ``bookings`` at the airline.
    """
    jobs = [(mode, folder, fork_child(_crash_booking, folder, request, mode, key, put_delay,
                                      log_path=folder / "child.log"))
            for mode, folder in _trial_folders(workdir, "booking", modes, trials)]
    results = []
    for mode, folder, pid in jobs:
        wait_child(pid, folder / "child.log")
        airline = Airline(folder / "airline.jsonl")
        saver = open_sqlite_saver(folder / "booking.db")
        with closing(saver.conn):
            steps = {t.metadata["step"] for t in saver.list(BOOKING_CONFIG)}
            graph = build_booking_graph(saver, airline.book, recording_key(key, folder / "keys.jsonl"))
            resume = None if steps else request
            graph.invoke(resume, {**BOOKING_CONFIG, "run_id": uuid.uuid4()}, **_durability(mode))
        attempts = [json.loads(line) for line in (folder / "keys.jsonl").read_text(encoding="utf-8").splitlines()]
        results.append({"mode": mode, "step saved": 0 in steps,
                        "resumed with": "the same command again" if resume else "invoke(None)",
                        "attempts": attempts, "bookings": len(airline.bookings)})
    return results


def execution_info(recorded: dict[str, Any]) -> ExecutionInfo:
    """An :class:`ExecutionInfo` rebuilt from one attempt's ``info`` dict (see :func:`recording_key`)."""
    return ExecutionInfo(**recorded)


def crash_table(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per mode, counts over the trials of :func:`booking_crash_trials`: what a key from task_id does."""
    rows: dict[Any, dict[str, Any]] = {}
    for result in results:
        row = rows.setdefault(result["mode"], {"mode": result["mode"] or "(default)", "trials": 0,
                                               "step saved": 0, "same task_id": 0, "bookings": Counter()})
        crashed, resumed = (attempt["info"]["task_id"] for attempt in result["attempts"])
        row["trials"] += 1
        row["step saved"] += result["step saved"]
        row["same task_id"] += crashed == resumed
        row["bookings"][result["bookings"]] += 1
    for row in rows.values():
        row["bookings"] = ", ".join(f"{n} ({count} of {row['trials']})" for n, count in sorted(row["bookings"].items()))
    return list(rows.values())
