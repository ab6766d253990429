"""Parallel seat and fare lookups that fail on purpose (chapter 06, pending writes).

The travel assistant looks up a seat and a fare in the same super-step::

    START --> lookup_seat --> END
      \\----> lookup_fare --> END        (optionally also lookup_bags)

``lookup_fare`` fails on its first call (a simulated timeout), so the step fails while
``lookup_seat`` has already succeeded. A :class:`LookupProbe` counts every node call and
records the task id each call ran under, so a notebook can show exactly what re-ran on
resume.

**Ordering without sleeps.** Two parallel nodes run on two threads, so "the seat lookup
finished first" must be arranged, not hoped for. A failing call waits on a
:class:`threading.Event` per channel (``probe.saved["seat"]`` …) that is set only once
that channel's write has *reached the saver*: :class:`WriteWatchSaver` sets it after
``put_writes`` returned. Under ``durability="exit"`` nothing reaches the saver before the
run ends, so :func:`run_until_failure` sets the same events from the run's stream instead
(the runtime emits a node's update only after it has recorded that node's write as
pending). Either way, a failing call raises only after every sibling that will succeed in
this round has its write recorded: the outcome is the same on every run.

Nothing here calls a real service. :class:`BookingService` is a stand-in for an airline's
booking API with an external counter, used to show that a side effect performed before
its node's write was saved happens again on resume, and how an idempotency key stops it.
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from typing import Any, Callable, Iterable, Sequence, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from .counting_saver import CountingSaver

CHANNEL_OF = {"lookup_seat": "seat", "lookup_fare": "fare", "lookup_bags": "bags"}
RESULTS = {"seat": "12A (window)", "fare": 420, "bags": "1 x 23 kg"}
ERRORS = {
    "lookup_seat": "seat map service timed out",
    "lookup_fare": "fare service timed out",
    "lookup_bags": "baggage service timed out",
}
GATE_TIMEOUT = 20.0  # seconds; only reached if the ordering logic is broken


class LookupState(TypedDict, total=False):
    """State of the lookup step: the route asked for and what each lookup found."""

    route: str
    seat: str
    fare: int
    bags: str
    price: str


class LookupProbe:
    """Counters and ordering events shared by a lookup graph's nodes and its driver.

    ``failures`` maps a node name to how many of its first calls fail (default: the fare
    lookup fails once). ``calls`` counts calls per node, ``task_ids`` lists the task id of
    each call per node, ``saved`` holds one Event per channel, set once that channel's
    write is recorded.
    """

    def __init__(self, failures: dict[str, int] | None = None) -> None:
        self.failures = dict({"lookup_fare": 1} if failures is None else failures)
        self.calls: Counter[str] = Counter()
        self.task_ids: dict[str, list[str]] = defaultdict(list)
        self.saved = {channel: threading.Event() for channel in CHANNEL_OF.values()}
        self._lock = threading.Lock()

    def record(self, node: str, task_id: str) -> int:
        """Count one call of ``node``; return its call number (1 for the first call)."""
        with self._lock:
            self.calls[node] += 1
            self.task_ids[node].append(task_id)
            return self.calls[node]

    def mark_saved(self, channels: Iterable[str]) -> None:
        for channel in channels:
            if channel in self.saved:
                self.saved[channel].set()

    def counts(self, nodes: Sequence[str] | None = None) -> dict[str, int]:
        """Calls per node, in the order given (default: every node seen, sorted)."""
        names = nodes if nodes is not None else sorted(self.calls)
        return {name: self.calls[name] for name in names}

    def wait_for_siblings(self, node: str, call: int, nodes: Sequence[str]) -> None:
        """Block a failing call until every sibling that succeeds by this round is saved.

        A sibling with fewer failures than ``call`` succeeds in this round or has already
        succeeded earlier, so its write will be (or was) recorded.
        """
        for other in nodes:
            if other != node and self.failures.get(other, 0) < call:
                channel = CHANNEL_OF[other]
                if not self.saved[channel].wait(GATE_TIMEOUT):
                    raise RuntimeError(f"{node}: the {channel!r} write was never recorded")


class WriteWatchSaver(CountingSaver):
    """A saver wrapper that tells a :class:`LookupProbe` when a write reached the saver.

    Counts calls like :class:`~helpers.counting_saver.CountingSaver`; after each
    ``put_writes`` has been stored it sets ``probe.saved[channel]`` for the channels written.
    """

    def __init__(self, inner: BaseCheckpointSaver, probe: LookupProbe) -> None:
        super().__init__(inner)
        self.probe = probe

    def put_writes(self, config, writes, task_id, task_path=""):  # type: ignore[override]
        super().put_writes(config, writes, task_id, task_path)
        self.probe.mark_saved(channel for channel, _ in writes)

    async def aput_writes(self, config, writes, task_id, task_path=""):  # type: ignore[override]
        await super().aput_writes(config, writes, task_id, task_path)
        self.probe.mark_saved(channel for channel, _ in writes)


def _lookup_node(name: str, probe: LookupProbe, nodes: Sequence[str]) -> Callable[..., dict[str, Any]]:
    channel = CHANNEL_OF[name]

    def node(state: LookupState, runtime: Runtime) -> dict[str, Any]:
        call = probe.record(name, runtime.execution_info.task_id)
        if call <= probe.failures.get(name, 0):
            probe.wait_for_siblings(name, call, nodes)
            raise TimeoutError(ERRORS[name])
        return {channel: RESULTS[channel]}

    node.__name__ = name
    return node


def price_trip(state: LookupState) -> dict[str, Any]:
    """The step after the lookups: a stand-in that combines their results."""
    return {"price": f"{state.get('fare')} EUR, seat {state.get('seat')}"}


def build_lookup_graph(checkpointer: Any, probe: LookupProbe,
                       nodes: Sequence[str] = ("lookup_seat", "lookup_fare"), *, then_price: bool = False):
    """START fans out to ``nodes`` (all in one super-step), each goes to END.

    Each node writes its own channel (``seat``, ``fare``, ``bags``) and fails on its first
    ``probe.failures[name]`` calls, after its siblings' writes were recorded. Only one node
    may fail: two failures in one round would race each other. With ``then_price``, the
    lookups lead to a ``price_trip`` node (the next super-step) instead of END.
    """
    unknown = sorted(set(nodes) - set(CHANNEL_OF))
    if unknown:
        raise ValueError(f"unknown lookup node(s) {unknown}; choose from {sorted(CHANNEL_OF)}")
    failing = sorted(name for name, times in probe.failures.items() if times > 0)
    if len(failing) > 1:
        raise ValueError(f"only one lookup may fail, got {failing}")
    builder = StateGraph(LookupState)
    for name in nodes:
        builder.add_node(name, _lookup_node(name, probe, tuple(nodes)))
        builder.add_edge(START, name)
    if then_price:
        def counted_price(state: LookupState) -> dict[str, Any]:
            probe.record("price_trip", "")
            return price_trip(state)

        builder.add_node("price_trip", counted_price)
        builder.add_edge(list(nodes), "price_trip")
        builder.add_edge("price_trip", END)
    else:
        for name in nodes:
            builder.add_edge(name, END)
    return builder.compile(checkpointer=checkpointer)


def run_until_failure(graph: Any, inputs: Any, config: dict[str, Any], probe: LookupProbe,
                      *, durability: str = "async") -> BaseException | None:
    """Run one round through ``graph.stream``; return the error it raised (or None).

    Sets ``probe.saved[channel]`` as soon as a node's update is emitted, which works in
    every durability mode, including ``"exit"`` where the saver hears nothing before the
    run ends. (The ``"custom"`` stream mode makes the runtime deliver updates while
    other nodes are still running.)
    """
    try:
        for mode, chunk in graph.stream(inputs, config, stream_mode=["updates", "custom"], durability=durability):
            if mode == "updates":
                for node, update in chunk.items():
                    if node in CHANNEL_OF and isinstance(update, dict):
                        probe.mark_saved(update)
    except Exception as exc:  # the failing lookup's error: returned, so callers can print it
        return exc
    return None


def resume_counts(durability: str, checkpointer: BaseCheckpointSaver | None = None) -> dict[str, Any]:
    """Fail the seat/fare step once, resume it, and report what happened.

    Returns ``{"error", "pending", "calls"}``: the error type of the first run, the sorted
    channels of the pending writes it left behind, and the node call counts after the
    resume. Both runs use ``durability``.
    """
    saver = checkpointer if checkpointer is not None else InMemorySaver()
    probe = LookupProbe()
    graph = build_lookup_graph(saver, probe)
    config = {"configurable": {"thread_id": f"resume-{durability}"}}
    error = run_until_failure(graph, {"route": "PEK-SFO"}, config, probe, durability=durability)
    pending = sorted(channel for _, channel, _ in saver.get_tuple(config).pending_writes)
    graph.invoke(None, config, durability=durability)
    return {"error": type(error).__name__, "pending": pending,
            "calls": probe.counts(("lookup_seat", "lookup_fare"))}


def pending_write_rows(saver: BaseCheckpointSaver, config: dict[str, Any], snapshot: Any) -> list[dict[str, Any]]:
    """The latest checkpoint's pending writes as rows ``{task, channel, value}``.

    Task ids are replaced by the task's node name (taken from ``snapshot.tasks``), so the
    rows are stable across runs; sorted by task then channel.
    """
    names = {task.id: task.name for task in snapshot.tasks}
    saved = saver.get_tuple(config)
    rows = [{"task": names.get(task_id, "?"), "channel": channel, "value": value}
            for task_id, channel, value in (saved.pending_writes if saved else [])]
    return sorted(rows, key=lambda row: (row["task"], row["channel"]))


# -- side effects ---------------------------------------------------------------------


class BookState(TypedDict, total=False):
    """State of the booking step: the seat to book and the airline's confirmation code."""

    seat: str
    confirmation: str


class BookingService:
    """A stand-in for an airline's booking API, outside the graph and its checkpoints.

    ``book(seat, key=None)`` creates a booking and returns its confirmation code. With an
    idempotency ``key`` it remembers the key: the same key again returns the first
    confirmation instead of booking twice (what a real booking API's idempotency header
    does). ``bookings`` lists every booking actually made.
    """

    def __init__(self) -> None:
        self.bookings: list[str] = []
        self.by_key: dict[str, str] = {}
        self.requests = 0
        self._lock = threading.Lock()

    def book(self, seat: str, key: str | None = None) -> str:
        with self._lock:
            self.requests += 1
            if key is not None and key in self.by_key:
                return self.by_key[key]
            code = f"BK{len(self.bookings) + 1:03d}"
            self.bookings.append(seat)
            if key is not None:
                self.by_key[key] = code
            return code


def build_booking_graph(checkpointer: Any, service: BookingService, *, fail_after_booking: int = 1,
                        key: Callable[[Any], str] | None = None):
    """START -> book_seat -> END.

    ``book_seat`` calls ``service.book`` and then, on its first ``fail_after_booking``
    calls, raises ``ConnectionError`` *after* the booking was made: the airline booked the
    seat, but the node's result never reached the checkpointer. With ``key`` (a function
    of :class:`langgraph.runtime.ExecutionInfo`), the node sends ``key(info)`` as the
    idempotency key.
    """
    calls = Counter()

    def book_seat(state: BookState, runtime: Runtime) -> dict[str, Any]:
        calls["book_seat"] += 1
        idem = key(runtime.execution_info) if key is not None else None
        code = service.book(state["seat"], key=idem)
        if calls["book_seat"] <= fail_after_booking:
            raise ConnectionError("connection lost after the airline confirmed")
        return {"confirmation": code}

    builder = StateGraph(BookState)
    builder.add_node("book_seat", book_seat)
    builder.add_edge(START, "book_seat")
    builder.add_edge("book_seat", END)
    graph = builder.compile(checkpointer=checkpointer)
    graph.calls = calls  # type: ignore[attr-defined]  # node call counter, for the notebook
    return graph


def book_with_retry(graph: Any, thread_id: str, seat: str = "12A") -> dict[str, Any]:
    """Run the booking step; when it fails, resume it once with ``invoke(None, ...)``.

    Returns ``{"first_run", "final"}``: the first run's error type (or "ok") and the
    final state's confirmation code.
    """
    config = {"configurable": {"thread_id": thread_id}}
    try:
        graph.invoke({"seat": seat}, config)
        first = "ok"
    except Exception as exc:  # the simulated lost connection
        first = type(exc).__name__
        graph.invoke(None, config)
    return {"first_run": first, "final": graph.get_state(config).values.get("confirmation")}
