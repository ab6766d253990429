"""Chapter 03's booking graph, and super-steps made visible.

LangGraph runs a graph in super-steps (Pregel / bulk synchronous parallel): *plan* the
tasks that are triggered, *execute* them (in parallel, each on the state as it was at the
start of the step), *update* the channels with all their writes at once, then save a
checkpoint (every step under ``durability="sync"`` or ``"async"``, only the last one under
``"exit"``). A checkpoint's ``tasks`` are therefore the nodes that run in the *next* step,
and a ``loop`` checkpoint holds the writes of the nodes its parent planned.

Saved from chapter 03 (``# saved as helpers.step_timeline.<name>``): the booking graph
(:func:`build_booking_flow` with its state :class:`Booking` and nodes). The rest is
plumbing that shows a run without changing it:

* :func:`timeline_rows` reads a thread's history into one row per checkpoint;
* :func:`draw_timeline` prints those rows and draws them (steps x nodes, checkpoints marked),
  returning the plotted points so a notebook can show the data nbval compares;
* :func:`updates_by_step` and :func:`debug_events` collect ``graph.stream`` output and
  order it by step, so parallel tasks finishing in either order print the same lines;
* :func:`trace_runtime` lists, in order, the runtime functions a run calls (load, plan,
  execute, update, save), by watching Python calls: it calls nothing inside LangGraph.
"""

from __future__ import annotations

import operator
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import FrameType
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from .checkpoints import checkpoint_id, label_ids, thread_config
from .text_tables import print_table

# ---------------------------------------------------------------------------------------
# the booking graph of chapter 03 (each definition is shown in a chapter cell first)

# shown in solutions/03_super_steps.ipynb
FARES = {"BER-LIS": 180, "BER-SYD": 1450}  # stand-in for a fare service
# shown in solutions/03_super_steps.ipynb
APPROVAL_LIMIT = 500                       # fares above this need a manager's approval


# shown in solutions/03_super_steps.ipynb
class Booking(TypedDict, total=False):
    route: str
    seat: str
    fare: int
    seen: Annotated[list, operator.add]    # reducer: each write is appended to the stored list
    status: str
    approved: bool                         # a manager's decision (chapter 07)


# shown in solutions/03_super_steps.ipynb
def lookup_seat(state: Booking):
    return {"seat": "12A", "seen": [f"lookup_seat saw fare={state.get('fare')}"]}


# shown in solutions/03_super_steps.ipynb
def lookup_fare(state: Booking):
    return {"fare": FARES[state["route"]], "seen": [f"lookup_fare saw seat={state.get('seat')}"]}


# shown in solutions/03_super_steps.ipynb
def quote(state: Booking):
    return {"seen": [f"quote saw seat={state.get('seat')} fare={state.get('fare')}"]}


# shown in solutions/03_super_steps.ipynb
def book(state: Booking):
    return {"status": "booked"}


# shown in solutions/03_super_steps.ipynb
def request_approval(state: Booking):
    return {"status": "waiting for approval"}  # chapter 07 turns this into a real pause


# shown in solutions/03_super_steps.ipynb
def needs_approval(state: Booking):
    return "request_approval" if state["fare"] > APPROVAL_LIMIT else "book"


# shown in solutions/03_super_steps.ipynb
def build_booking_flow(checkpointer: BaseCheckpointSaver | None = None, *,
                       quote_node: Callable[[Booking], dict] = quote,
                       router: Callable[[Booking], str] = needs_approval) -> CompiledStateGraph:
    """Both lookups in parallel, then quote, then book or request_approval (chosen by router)."""
    builder = StateGraph(Booking)
    builder.add_node(lookup_seat)
    builder.add_node(lookup_fare)
    builder.add_node("quote", quote_node)
    builder.add_node(book)
    builder.add_node(request_approval)
    builder.add_edge(START, "lookup_seat")
    builder.add_edge(START, "lookup_fare")                     # two edges from START: a fan-out
    builder.add_edge(["lookup_seat", "lookup_fare"], "quote")  # quote waits for both
    builder.add_conditional_edges("quote", router, ["book", "request_approval"])
    builder.add_edge("book", END)
    builder.add_edge("request_approval", END)
    return builder.compile(checkpointer=checkpointer)


# ---------------------------------------------------------------------------------------
# a thread's history as a timeline

TIMELINE_COLUMNS = ("step", "checkpoint", "source", "nodes run", "next")


def timeline_rows(graph: CompiledStateGraph, config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per checkpoint of the thread, oldest first.

    ``nodes run`` are the nodes that executed in this super-step, i.e. the tasks planned by
    the parent checkpoint; an ``input`` (or ``fork``/``update``) checkpoint records no node run.
    """
    snapshots = sorted(graph.get_state_history(thread_config(dict(config))), key=lambda s: checkpoint_id(s.config))
    labels = label_ids(checkpoint_id(s.config) for s in snapshots)
    by_id = {checkpoint_id(s.config): s for s in snapshots}
    rows = []
    for snap in snapshots:
        parent = by_id.get(checkpoint_id(snap.parent_config))
        source = snap.metadata.get("source")
        ran = tuple(sorted(t.name for t in parent.tasks)) if parent is not None and source == "loop" else ()
        rows.append({"step": snap.metadata.get("step"), "checkpoint": labels[checkpoint_id(snap.config)],
                     "source": source, "nodes run": ran, "next": tuple(snap.next)})
    return rows


def timeline_points(rows: Sequence[Mapping[str, Any]]) -> dict[str, list]:
    """The data a timeline plot shows: node order (y axis), task points and checkpoint points."""
    nodes: list[str] = []
    for row in rows:
        for node in row["nodes run"]:
            if node not in nodes:
                nodes.append(node)
    tasks = [(row["step"], node) for row in rows for node in row["nodes run"]]
    checkpoints = [(row["step"], row["checkpoint"], row["source"]) for row in rows]
    return {"nodes": nodes, "tasks": tasks, "checkpoints": checkpoints}


def draw_timeline(rows: Sequence[Mapping[str, Any]], *, title: str = "super-steps", ax: Any = None,
                  show_table: bool = True) -> dict[str, list]:
    """Print ``rows`` as a table and plot them: steps on x, nodes on y, checkpoints marked.

    Each task is a square at (step, node). Each checkpoint is a diamond on the bottom row
    ``checkpoint saved``, labelled with its label and source, plus a faint vertical line: the
    end of that super-step. Returns :func:`timeline_points` (what was drawn).
    """
    import matplotlib.pyplot as plt

    points = timeline_points(rows)
    if show_table:
        print_table(rows, TIMELINE_COLUMNS)
    if ax is None:
        _fig, ax = plt.subplots(figsize=(7, 0.55 * (len(points["nodes"]) + 1) + 1.2))
    # first node on top, checkpoints on the bottom row
    y_of = {"checkpoint saved": 0, **{node: len(points["nodes"]) - i for i, node in enumerate(points["nodes"])}}
    for step, node in points["tasks"]:
        ax.scatter(step, y_of[node], marker="s", s=140, color="tab:blue", zorder=3)
    for step, label, source in points["checkpoints"]:
        color = "tab:orange" if source == "input" else "tab:green"
        ax.axvline(step + 0.45, color="0.85", lw=1, zorder=1)
        ax.scatter(step, 0, marker="D", s=70, color=color, zorder=3)
        ax.annotate(f"{label}\n{source}", (step, 0), textcoords="offset points", xytext=(0, -26),
                    ha="center", fontsize=7)
    steps = sorted({s for s, _l, _src in points["checkpoints"]})
    ax.set_xticks(steps)
    ax.set_yticks(list(y_of.values()), list(y_of.keys()))
    ax.set_xlabel("super-step (metadata['step'])")
    ax.set_ylim(-1.1, len(points["nodes"]) + 0.6)
    if steps:
        ax.set_xlim(steps[0] - 0.6, steps[-1] + 0.6)
    ax.set_title(title)
    ax.figure.tight_layout()
    return points


# ---------------------------------------------------------------------------------------
# watching a run


def _short_update(update: Any) -> Any:
    if isinstance(update, dict):
        return {k: update[k] for k in sorted(update)}
    return update


def updates_by_step(graph: CompiledStateGraph, inputs: Any, config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Run ``graph.stream(inputs, config, stream_mode=["updates", "checkpoints"])``.

    Returns one row per node update, tagged with the super-step whose checkpoint followed
    it, sorted by (step, node): parallel nodes may finish in either order, the rows do not
    change. A checkpointer is required (the ``checkpoints`` events give the step numbers).
    """
    rows: list[dict[str, Any]] = []
    pending: list[tuple[str, Any]] = []
    for mode, chunk in graph.stream(inputs, dict(config), stream_mode=["updates", "checkpoints"]):
        if mode == "updates":
            pending += [(node, _short_update(update)) for node, update in chunk.items()]
        else:
            step = chunk["metadata"]["step"]
            rows += [{"step": step, "node": node, "update": update}
                     for node, update in sorted(pending, key=lambda p: p[0])]
            pending = []
    rows += [{"step": "-", "node": node, "update": update} for node, update in sorted(pending, key=lambda p: p[0])]
    return rows


PHASES = {"task": "plan", "task_result": "execute", "checkpoint": "update+save"}


def debug_events(graph: CompiledStateGraph, inputs: Any, config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Run with ``stream_mode="debug"`` and keep the stable part of each event.

    Each row: step, phase (``plan`` for a ``task`` event, ``execute`` for ``task_result``,
    ``update+save`` for ``checkpoint``), node (or ``-``) and a short detail: the input keys a
    task received, the keys it wrote, or the checkpoint's source and next nodes. Rows are
    sorted by step, then phase, then node.
    """
    order = {"plan": 0, "execute": 1, "update+save": 2}
    rows = []
    for event in graph.stream(inputs, dict(config), stream_mode="debug"):
        kind, payload = event["type"], event["payload"]
        if kind == "task":
            node, detail = payload["name"], "saw " + _keys_and_values(payload["input"])
        elif kind == "task_result":
            node, detail = payload["name"], "wrote " + ",".join(sorted(_written_keys(payload["result"])))
        elif kind == "checkpoint":
            node = "-"
            detail = f"source={payload['metadata']['source']} next={','.join(sorted(payload['next'])) or '()'}"
        else:
            continue
        rows.append({"step": event["step"], "phase": PHASES[kind], "node": node, "detail": detail})
    return sorted(rows, key=lambda r: (r["step"], order[r["phase"]], r["node"]))


def _written_keys(result: Any) -> Iterable[str]:
    if isinstance(result, dict):
        return result.keys()
    return (name for name, _value in result)  # older versions: a list of (channel, value)


def _keys_and_values(state: Any) -> str:
    if not isinstance(state, dict):
        return type(state).__name__

    def short(value: Any) -> str:
        return f"[{len(value)} item(s)]" if isinstance(value, list) and value else repr(value)

    return "{" + ", ".join(f"{k}={short(state[k])}" for k in sorted(state)) + "}"


# ---------------------------------------------------------------------------------------
# the runtime's calls, in order

#: Saver methods the runtime calls, and the phase of a super-step each belongs to.
SAVER_CALLS = {"get_tuple": "load", "put_writes": "save a node's writes", "put": "save"}
#: LangGraph's internal functions behind each phase (names from the pinned source; internal,
#: so they may be renamed in a release).
RUNTIME_CALLS = {"prepare_next_tasks": "plan", "apply_writes": "update", "create_checkpoint": "update"}


def _channels(value: Any) -> str:
    return ", ".join(sorted(str(c) for c in value)) if value else "-"


def trace_runtime(run: Callable[[], Any], nodes: Iterable[Callable[..., Any]]) -> list[dict[str, str]]:
    """Call ``run()`` and return the super-step calls it made, in the order they started.

    One row per call of a saver method (:data:`SAVER_CALLS`, on any
    ``BaseCheckpointSaver``), of one of LangGraph's step functions (:data:`RUNTIME_CALLS`)
    or of one of the node functions in ``nodes``. Each row has ``call``, ``phase``,
    ``thread`` (``main`` or ``background``: savers write from a background thread) and a
    short ``detail`` (what was loaded, planned, updated or saved). It works with
    ``sys.setprofile``/``threading.setprofile`` and only reads frames: nothing in the run
    changes. Calls on several threads interleave in real time, so only calls the run waits
    for (``put`` under ``durability="sync"``) have a fixed place; ``put_writes`` does not.
    """
    node_codes = {fn.__code__: fn.__name__ for fn in nodes}
    rows: list[dict[str, str]] = []
    open_rows: dict[tuple[int, str], dict[str, str]] = {}
    lock = threading.Lock()
    active = True

    def describe_call(frame: FrameType, name: str) -> tuple[str, str, str] | None:
        code = frame.f_code
        if code in node_codes:
            return node_codes[code], "execute", ""
        if name in SAVER_CALLS and isinstance(frame.f_locals.get("self"), BaseCheckpointSaver):
            if name == "put":
                return "saver.put", SAVER_CALLS[name], f"checkpoint of step {frame.f_locals['metadata'].get('step')}"
            if name == "put_writes":
                return "saver.put_writes", SAVER_CALLS[name], _channels(c for c, _v in frame.f_locals["writes"])
            return "saver.get_tuple", SAVER_CALLS[name], ""
        if name in RUNTIME_CALLS and frame.f_globals.get("__name__", "").startswith("langgraph."):
            detail = f"checkpoint of step {frame.f_locals.get('step')}" if name == "create_checkpoint" else ""
            return name, RUNTIME_CALLS[name], detail
        return None

    def describe_return(name: str, value: Any) -> str | None:
        if name == "saver.get_tuple":
            return "nothing saved" if value is None else f"checkpoint of step {value.metadata.get('step')}"
        if name == "prepare_next_tasks":
            return "tasks: " + _channels(t.name for t in value.values()) if value else "no tasks: the run ends"
        if name == "apply_writes":
            return "updated: " + _channels(value)
        return None

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if not active:
            sys.setprofile(None)  # a background thread outliving the run stops tracing itself
            return
        if event not in ("call", "return"):
            return
        name = frame.f_code.co_name
        if frame.f_code not in node_codes and name not in SAVER_CALLS and name not in RUNTIME_CALLS:
            return
        key = (id(frame), name)
        if event == "call":
            described = describe_call(frame, name)
            if described is None:
                return
            call, phase, detail = described
            row = {"call": call, "phase": phase,
                   "thread": "main" if threading.current_thread() is threading.main_thread() else "background",
                   "detail": detail}
            with lock:
                rows.append(row)
                open_rows[key] = row
        else:
            with lock:
                row = open_rows.pop(key, None)
            if row is not None:
                detail = describe_return(row["call"], arg)
                if detail is not None:
                    row["detail"] = detail

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        active = False
    return rows
