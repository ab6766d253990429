"""Super-steps made visible: which nodes ran in which step, and which checkpoint each step saved.

LangGraph runs a graph in super-steps (Pregel / bulk synchronous parallel): *plan* the
tasks that are triggered, *execute* them (in parallel, each on the state as it was at the
start of the step), *update* the channels with all their writes at once, then save one
checkpoint. A checkpoint's ``tasks`` are therefore the nodes that run in the *next* step,
and a ``loop`` checkpoint holds the writes of the nodes its parent planned.

* :func:`timeline_rows` reads a thread's history into one row per checkpoint;
* :func:`draw_timeline` prints those rows and draws them (steps x nodes, checkpoints marked),
  returning the plotted points so a notebook can show the data nbval compares;
* :func:`updates_by_step` and :func:`debug_events` collect ``graph.stream`` output and
  order it by step, so parallel tasks finishing in either order print the same lines.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from .checkpoints import checkpoint_id, label_ids, thread_config
from .text_tables import print_table

TIMELINE_COLUMNS = ("step", "checkpoint", "source", "nodes run", "next")


def timeline_rows(graph: Any, config: Mapping[str, Any]) -> list[dict[str, Any]]:
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


def updates_by_step(graph: Any, inputs: Any, config: Mapping[str, Any]) -> list[dict[str, Any]]:
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


def debug_events(graph: Any, inputs: Any, config: Mapping[str, Any]) -> list[dict[str, Any]]:
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
