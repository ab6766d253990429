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
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import ExecutionInfo, Runtime
from langgraph.types import Durability, RetryPolicy, StateSnapshot

from .counting_saver import CountingSaver
from .processes import CRASH_EXIT_CODE

# -- shown in the chapter ---------------------------------------------------------------


# shown in solutions/06_pending_writes.ipynb
class LookupState(TypedDict, total=False):
    """The route asked for and what the lookups found (bags and price: exercise 06.1)."""

    route: str
    seat: str
    fare: int
    bags: str
    price: str


# shown in solutions/06_pending_writes.ipynb
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


# shown in solutions/06_pending_writes.ipynb
class BookState(TypedDict, total=False):
    """A booking command: its business ID (the command ID), the seat to book, the airline's confirmation code."""

    command_id: str
    seat: str
    confirmation: str


# shown in solutions/06_pending_writes.ipynb
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


class FlakyDesk:
    """Stand-in seat, fare and baggage services that fail on schedule, with call counters.

    ``failures`` maps a service (``find_seat``, ``quote_fare``, ``find_bags``) to how many
    of its first calls fail (default: the fare service fails once); at most one service
    may fail. ``services`` are the services the graph calls in one super-step: a failing
    call waits until every other one that succeeds in this round has handed its write over
    (``saved[channel]``), then raises ``TimeoutError``, or, with ``crash=True``, ends the
    process with ``os._exit(CRASH_EXIT_CODE)``. ``calls`` counts calls per service.
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
    channels of the pending writes it left, and the service calls over both runs (the failed
    one and the resume). Both
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
    with ``crash_after_booking`` the first request ends this process with ``os._exit(CRASH_EXIT_CODE)``.
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
