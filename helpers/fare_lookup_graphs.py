"""Chapter 06 (pending writes): the lookup and booking graphs, their stand-in services, real crashes.

The chapter shows these in cells and saves them here (``# saved as`` lines; a test keeps
both identical): :class:`LookupState` and :func:`build_lookup_graph` (a seat and a fare
lookup in one super-step), :class:`BookState` and :func:`build_booking_graph` (a booking
whose side effect happens outside the graph).

The rest is plumbing that is not the lesson:

- :class:`FlakyDesk`: deterministic stand-ins for the seat, fare and baggage services. A
  service can fail on its first calls (a simulated timeout) or kill its whole process with
  ``os._exit`` (a real crash). **Ordering without sleeps:** a failing call first waits on a
  :class:`threading.Event` per channel (``desk.saved["seat"]`` ...) until every sibling
  that succeeds in the same round has handed its write over; :class:`WriteWatchSaver`
  sets the event once the write is stored, :func:`run_until_failure` as soon as the
  runtime emits the sibling's update (which it does right after handing the write to the
  saver, so this also works under ``durability="exit"``).
- :class:`Airline`: a stand-in booking API with idempotency keys. With a ``path`` its
  bookings live in a file, so they outlive a crashed process, like another company's system.
- Crash experiments in **forked child processes** (:func:`lost_write_trials`,
  :func:`booking_crash_trials`): the child runs a shown graph on a SQLite file and dies
  with ``os._exit`` inside a node; this process then reads the file and resumes. Forking
  costs milliseconds (a fresh interpreter would import LangGraph again, about a second)
  and passes the graph's functions to the child as they are. It needs ``os.fork``
  (Linux, macOS, WSL, Binder).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import ExecutionInfo, Runtime
from langgraph.types import Durability, RetryPolicy, StateSnapshot

from .counting_saver import CountingSaver

# -- shown in the chapter ---------------------------------------------------------------


class LookupState(TypedDict, total=False):
    """The route asked for and what the lookups found (bags and price: exercise 06.1)."""

    route: str
    seat: str
    fare: int
    bags: str
    price: str


def build_lookup_graph(checkpointer: BaseCheckpointSaver | None, find_seat: Callable[[str], str],
                       quote_fare: Callable[[str], int]) -> CompiledStateGraph:
    """START fans out to lookup_seat and lookup_fare: two tasks in one super-step."""

    def lookup_seat(state: LookupState) -> dict[str, str]:
        return {"seat": find_seat(state["route"])}

    def lookup_fare(state: LookupState) -> dict[str, int]:
        return {"fare": quote_fare(state["route"])}

    builder = StateGraph(LookupState)
    builder.add_node("lookup_seat", lookup_seat)
    builder.add_node("lookup_fare", lookup_fare)
    builder.add_edge(START, "lookup_seat")
    builder.add_edge(START, "lookup_fare")
    builder.add_edge("lookup_seat", END)
    builder.add_edge("lookup_fare", END)
    return builder.compile(checkpointer=checkpointer)


class BookState(TypedDict, total=False):
    """A booking request: its business ID, the seat to book, the airline's confirmation code."""

    request_id: str
    seat: str
    confirmation: str


def build_booking_graph(checkpointer: BaseCheckpointSaver | None, book: Callable[[str, str | None], str],
                        idempotency_key: Callable[[BookState, ExecutionInfo], str] | None = None,
                        retry_policy: RetryPolicy | None = None) -> CompiledStateGraph:
    """START -> book_seat -> END. The node's side effect is ``book(seat, key)`` at the airline.

    With ``idempotency_key``, the node sends ``idempotency_key(state, execution_info)``
    along, so that the airline can recognise a repeated request.
    """

    def book_seat(state: BookState, runtime: Runtime) -> dict[str, str]:
        key = idempotency_key(state, runtime.execution_info) if idempotency_key else None
        return {"confirmation": book(state["seat"], key)}

    builder = StateGraph(BookState)
    builder.add_node("book_seat", book_seat, retry_policy=retry_policy)
    builder.add_edge(START, "book_seat")
    builder.add_edge("book_seat", END)
    return builder.compile(checkpointer=checkpointer)


# -- stand-in lookup services -------------------------------------------------------------

CHANNEL_OF = {"find_seat": "seat", "quote_fare": "fare", "find_bags": "bags"}
RESULTS = {"seat": "12A (window)", "fare": 420, "bags": "1 x 23 kg"}
ERRORS = {
    "find_seat": "seat map service timed out",
    "quote_fare": "fare service timed out",
    "find_bags": "baggage service timed out",
}
GATE_TIMEOUT = 20.0  # seconds; only reached if the ordering logic is broken
CRASH_EXIT_CODE = 17


class FlakyDesk:
    """Stand-in seat, fare and baggage services that fail on schedule, with call counters.

    ``failures`` maps a service (``find_seat``, ``quote_fare``, ``find_bags``) to how many
    of its first calls fail (default: the fare service fails once); at most one service
    may fail. ``services`` are the services the graph calls in one super-step: a failing
    call waits until every other one that succeeds in this round has handed its write over
    (``saved[channel]``), then raises ``TimeoutError``, or, with ``crash=True``, ends the
    process with ``os._exit(17)``. ``calls`` counts calls per service.
    """

    def __init__(self, failures: dict[str, int] | None = None,
                 services: Sequence[str] = ("find_seat", "quote_fare"), *, crash: bool = False) -> None:
        self.failures = dict({"quote_fare": 1} if failures is None else failures)
        unknown = sorted((set(services) | set(self.failures)) - set(CHANNEL_OF))
        if unknown:
            raise ValueError(f"unknown service(s) {unknown}; choose from {sorted(CHANNEL_OF)}")
        failing = sorted(name for name, times in self.failures.items() if times > 0)
        if len(failing) > 1:
            raise ValueError(f"only one service may fail, got {failing}")
        self.services = tuple(services)
        self.crash = crash
        self.calls: Counter[str] = Counter()
        self.saved = {channel: threading.Event() for channel in CHANNEL_OF.values()}
        self._lock = threading.Lock()

    def find_seat(self, route: str) -> str:
        return self._serve("find_seat")

    def quote_fare(self, route: str) -> int:
        return self._serve("quote_fare")

    def find_bags(self, route: str) -> str:
        return self._serve("find_bags")

    def counts(self, services: Sequence[str] | None = None) -> dict[str, int]:
        """Calls per service, in the order given (default: the desk's services)."""
        return {name: self.calls[name] for name in (services or self.services)}

    def mark_saved(self, channels: Iterable[str]) -> None:
        for channel in channels:
            if channel in self.saved:
                self.saved[channel].set()

    def _serve(self, service: str) -> Any:
        with self._lock:
            self.calls[service] += 1
            call = self.calls[service]
        if call <= self.failures.get(service, 0):
            self._wait_for_siblings(service, call)
            if self.crash:
                os._exit(CRASH_EXIT_CODE)  # a real crash: no cleanup, nothing more reaches the saver
            raise TimeoutError(ERRORS[service])
        return RESULTS[CHANNEL_OF[service]]

    def _wait_for_siblings(self, service: str, call: int) -> None:
        # a sibling with fewer failures than `call` succeeds in this round (or did earlier)
        for other in self.services:
            if other != service and self.failures.get(other, 0) < call:
                channel = CHANNEL_OF[other]
                if not self.saved[channel].wait(GATE_TIMEOUT):
                    raise RuntimeError(f"{service}: the {channel!r} write was never handed over")


class WriteWatchSaver(CountingSaver):
    """A saver wrapper that tells a :class:`FlakyDesk` when a write has been stored.

    Counts calls like :class:`~helpers.counting_saver.CountingSaver`; after each
    ``put_writes`` has returned it sets ``desk.saved[channel]`` for the channels written.
    """

    def __init__(self, inner: BaseCheckpointSaver, desk: FlakyDesk) -> None:
        super().__init__(inner)
        self.desk = desk

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        super().put_writes(config, writes, task_id, task_path)
        self.desk.mark_saved(channel for channel, _ in writes)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        await super().aput_writes(config, writes, task_id, task_path)
        self.desk.mark_saved(channel for channel, _ in writes)


def run_until_failure(graph: CompiledStateGraph, inputs: Any, config: RunnableConfig, desk: FlakyDesk,
                      *, durability: Durability | None = None) -> BaseException | None:
    """Run one round through ``graph.stream``; return the error it raised (or None).

    Sets ``desk.saved[channel]`` as soon as a node's update is emitted, which works in
    every durability mode, including ``"exit"`` where the saver hears nothing before the
    run ends. (The ``"custom"`` stream mode makes the runtime deliver updates while other
    nodes are still running.) ``durability=None`` uses the default.
    """
    kwargs = {} if durability is None else {"durability": durability}
    try:
        for mode, chunk in graph.stream(inputs, config, stream_mode=["updates", "custom"], **kwargs):
            if mode == "updates":
                for update in chunk.values():
                    if isinstance(update, dict):
                        desk.mark_saved(update)
    except Exception as exc:  # the failing lookup's error: returned, so callers can print it
        return exc
    return None


def resume_counts(durability: Durability, checkpointer: BaseCheckpointSaver | None = None) -> dict[str, Any]:
    """Fail the seat/fare step once (a caught error), resume it, and report what happened.

    Returns ``{"error", "pending", "calls"}``: the first run's error type, the sorted
    channels of the pending writes it left, and the service calls after the resume. Both
    runs use ``durability``.
    """
    saver = checkpointer if checkpointer is not None else InMemorySaver()
    desk = FlakyDesk()
    graph = build_lookup_graph(saver, desk.find_seat, desk.quote_fare)
    config: RunnableConfig = {"configurable": {"thread_id": f"resume-{durability}"}}
    error = run_until_failure(graph, {"route": "PEK-SFO"}, config, desk, durability=durability)
    latest = saver.get_tuple(config)
    pending = sorted(channel for _, channel, _ in (latest.pending_writes if latest else []))
    graph.invoke(None, config, durability=durability)
    return {"error": type(error).__name__, "pending": pending, "calls": desk.counts()}


def pending_write_rows(saver: BaseCheckpointSaver, config: RunnableConfig,
                       snapshot: StateSnapshot) -> list[dict[str, Any]]:
    """The latest checkpoint's pending writes as rows ``{task, channel, value}``.

    Task ids are replaced by the task's node name (from ``snapshot.tasks``), so the rows
    are stable across runs; sorted by task, then channel.
    """
    names = {task.id: task.name for task in snapshot.tasks}
    saved = saver.get_tuple(config)
    rows = [{"task": names.get(task_id, "?"), "channel": channel, "value": value}
            for task_id, channel, value in (saved.pending_writes if saved else [])]
    return sorted(rows, key=lambda row: (row["task"], row["channel"]))


# -- the stand-in airline -----------------------------------------------------------------


class Airline:
    """A stand-in for an airline's booking API: outside the graph and its checkpoints.

    ``book(seat, key=None)`` makes a booking and returns its code (``BK001``, ...). With an
    idempotency ``key`` it remembers the key: the same key again returns the first
    booking's code instead of booking twice (what a real booking API's idempotency header
    does). With ``path`` the requests and bookings are appended to that file (one JSON
    object per line), so they outlive a crashed process; without it they live in memory.

    Failure injection, *after* the booking was made: on its first ``fail_after_booking``
    requests it raises ``ConnectionError`` (the confirmation got lost on the way back);
    with ``crash_after_booking`` the first request ends this process with ``os._exit(17)``.
    """

    def __init__(self, path: str | Path | None = None, *, fail_after_booking: int = 0,
                 crash_after_booking: bool = False) -> None:
        self.path = Path(path) if path is not None else None
        self.fail_after_booking = fail_after_booking
        self.crash_after_booking = crash_after_booking
        self._events: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def book(self, seat: str, key: str | None = None) -> str:
        with self._lock:
            events = self._read()
            self._append({"event": "request", "key": key})
            attempt = sum(1 for e in events if e["event"] == "request") + 1
            known = [e["code"] for e in events if e["event"] == "booking" and key is not None and e["key"] == key]
            if known:
                return known[0]
            code = f"BK{sum(1 for e in events if e['event'] == 'booking') + 1:03d}"
            self._append({"event": "booking", "code": code, "seat": seat, "key": key})
        if self.crash_after_booking and attempt == 1:
            os._exit(CRASH_EXIT_CODE)  # a real crash right after the airline booked
        if attempt <= self.fail_after_booking:
            raise ConnectionError("connection lost after the airline confirmed")
        return code

    @property
    def bookings(self) -> list[str]:
        """The confirmation codes of every booking actually made, in order."""
        return [e["code"] for e in self._read() if e["event"] == "booking"]

    @property
    def requests(self) -> int:
        """How many booking requests reached the airline."""
        return sum(1 for e in self._read() if e["event"] == "request")

    def _read(self) -> list[dict[str, Any]]:
        if self.path is None:
            return list(self._events)
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines() if line]

    def _append(self, event: dict[str, Any]) -> None:
        if self.path is None:
            self._events.append(event)
            return
        # open/write/close: once close() returns the line is in the OS, so it survives os._exit
        with open(self.path, "a", encoding="utf-8") as log:
            log.write(json.dumps(event) + "\n")


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
    """Start ``target(*args)`` in a forked child process; return its pid.

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
    workdir = Path(workdir)
    jobs = []
    for mode in modes:
        for trial in range(trials):
            folder = workdir / f"lost-write-{mode}-{trial}"
            folder.mkdir()
            pid = fork_child(_crash_lookups, folder / "trip.db", mode, writes_delay, log_path=folder / "child.log")
            jobs.append((mode, folder, pid))
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
    ``invoke(None)`` when a checkpoint was saved, otherwise the same ``request`` again, as
    a client retry would.

    Returns one dict per trial: ``mode``, ``step saved`` (the checkpoint that planned
    ``book_seat`` reached the file), ``resumed with``, ``attempts`` (the execution info
    and key of the crashed call and of the resumed one) and ``bookings`` at the airline.
    """
    workdir = Path(workdir)
    jobs = []
    for mode in modes:
        for trial in range(trials):
            folder = workdir / f"booking-{mode or 'default'}-{trial}"
            folder.mkdir()
            pid = fork_child(_crash_booking, folder, request, mode, key, put_delay, log_path=folder / "child.log")
            jobs.append((mode, folder, pid))
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
                        "resumed with": "the same request again" if resume else "invoke(None)",
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
