"""Nested subgraphs of the travel assistant, and stable views of their checkpoint namespaces.

The graph (no model; every node is a deterministic stand-in)::

    root:     START -> planner -> answer
    planner:  START -> plan -> search                (a compiled subgraph used as a node)
    search:   START -> find_fares [-> hold_fare]      (nested inside planner)

The node ``hold_fare`` (:func:`place_hold`) asks a stand-in fare service to hold the fare;
``fare_service["timeouts"]`` says how many more requests will time out (``TimeoutError``),
so a chapter can make one run fail inside the nested graph and resume it. The ``plan`` node
(:func:`make_plan`) counts how many plans the planner has made (``plans_made``, a key only
the planner's state has), so a run shows whether the planner remembered an earlier run.
The graph and its nodes are shown in chapter 05 first (``# saved as``); the rest of this
module prints namespaces and snapshots in a stable form.

A namespace (``checkpoint_ns``) names the graph level a checkpoint belongs to: ``''`` for
the root, ``planner:<task-id>`` for the planner, ``planner:<task-id>|search:<task-id>``
for the search graph inside it. Task ids change every run, so :func:`ns_shape` prints the
structure instead of the ids. The separators ``|`` (NS_SEP) and ``:`` (NS_END) come from
``langgraph._internal._constants``, a private module that may move between releases.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any, TypedDict

from langgraph._internal._constants import NS_END, NS_SEP  # private: may move in a future release
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StateSnapshot

TASK_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


# shown in solutions/05_namespaces.ipynb
class Trip(TypedDict, total=False):
    """The root graph's state."""
    request: str
    plan: str
    fare: str
    answer: str


# shown in solutions/05_namespaces.ipynb
class PlannerState(TypedDict, total=False):
    """The planner's and search graph's state: ``plans_made`` is theirs alone."""
    request: str
    plan: str
    fare: str
    plans_made: int


# shown in solutions/05_namespaces.ipynb
def make_plan(state: PlannerState):
    made = state.get("plans_made", 0) + 1
    return {"plans_made": made, "plan": f"plan #{made}: fly to {state['request']}"}


# shown in solutions/05_namespaces.ipynb
def find_fares(state: PlannerState):
    return {"fare": f"{state['request']} 180 EUR"}


# shown in solutions/05_namespaces.ipynb
fare_service = {"timeouts": 0}   # how many more hold requests will time out (a flaky stand-in service)


# shown in solutions/05_namespaces.ipynb
def place_hold(state: PlannerState):
    if fare_service["timeouts"] > 0:
        fare_service["timeouts"] -= 1
        raise TimeoutError("the fare service timed out")
    return {"fare": f"{state['fare']} (held)"}


# shown in solutions/05_namespaces.ipynb
def write_answer(state: Trip):
    return {"answer": f"{state['plan']}; fare {state['fare']}"}


# shown in solutions/05_namespaces.ipynb
def build_trip_planner(checkpointer: BaseCheckpointSaver | None = None, *, subgraph_checkpointer: bool | None = None,
                       hold: bool = False) -> CompiledStateGraph:
    """root(planner(search)): the root compiled with ``checkpointer``, both subgraphs with ``subgraph_checkpointer``.

    ``subgraph_checkpointer``: what each subgraph's ``compile`` receives (None, True or False;
    chapter 05 compares them). ``hold`` adds the node ``hold_fare`` (:func:`place_hold`) after ``find_fares``.
    """
    search = StateGraph(PlannerState)
    search.add_node("find_fares", find_fares)
    search.add_edge(START, "find_fares")
    if hold:
        search.add_node("hold_fare", place_hold)
        search.add_edge("find_fares", "hold_fare")
    planner = StateGraph(PlannerState)
    planner.add_node("plan", make_plan)
    planner.add_node("search", search.compile(checkpointer=subgraph_checkpointer))  # a compiled graph is a node
    planner.add_edge(START, "plan")
    planner.add_edge("plan", "search")
    root = StateGraph(Trip)
    root.add_node("planner", planner.compile(checkpointer=subgraph_checkpointer))
    root.add_node("answer", write_answer)
    root.add_edge(START, "planner")
    root.add_edge("planner", "answer")
    return root.compile(checkpointer=checkpointer)


def ns_parts(ns: str) -> list[tuple[str, str | None]]:
    """``'planner:<id>|search:<id>'`` -> ``[('planner', '<id>'), ('search', '<id>')]``; root -> ``[]``."""
    if not ns:
        return []
    parts = []
    for segment in ns.split(NS_SEP):
        node, sep, task_id = segment.partition(NS_END)
        parts.append((node, task_id if sep else None))
    return parts


def ns_shape(ns: str) -> str:
    """A namespace with each task id replaced by ``<task-id>``; the root prints as ``''``."""
    if not ns:
        return "''"
    segments = []
    for node, task_id in ns_parts(ns):
        if task_id is None:
            segments.append(node)
        else:
            segments.append(f"{node}{NS_END}{'<task-id>' if TASK_ID.match(task_id) else task_id}")
    return NS_SEP.join(segments)


def namespace_rows(saver: BaseCheckpointSaver, config: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Checkpoints the saver holds, grouped by namespace shape.

    ``saver.list(config)`` with a thread config and no ``checkpoint_ns`` spans every namespace
    of that thread; ``config=None`` spans every thread.
    """
    namespaces: dict[str, set[str]] = {}
    counts: Counter[str] = Counter()
    for item in saver.list(config):
        ns = item.config["configurable"]["checkpoint_ns"]
        shape = ns_shape(ns)
        namespaces.setdefault(shape, set()).add(ns)
        counts[shape] += 1
    order = sorted(counts, key=lambda s: (s.count(NS_SEP), s != "''", s))
    return [{"namespace": s, "distinct namespaces": len(namespaces[s]), "checkpoints": counts[s]} for s in order]


def snapshot_tree(snapshot: StateSnapshot, depth: int = 0) -> list[str]:
    """Lines describing a StateSnapshot and the nested snapshots in its tasks (``subgraphs=True``)."""
    pad = "    " * depth
    ns = snapshot.config["configurable"].get("checkpoint_ns", "")
    lines = [f"{pad}ns={ns_shape(ns)} next={tuple(snapshot.next)} values={sorted(snapshot.values)}"]
    for task in snapshot.tasks:
        asks = [i.value for i in task.interrupts]
        kind = type(task.state).__name__ if task.state is not None else "None"
        lines.append(f"{pad}  task {task.name!r}: state is {kind}" + (f", interrupts {asks}" if asks else "")
                     + (f", error {task.error}" if task.error is not None else ""))  # a stored error is its repr string
        if hasattr(task.state, "tasks"):
            lines += snapshot_tree(task.state, depth + 1)
    return lines


def print_snapshot_tree(snapshot: StateSnapshot) -> None:
    print("\n".join(snapshot_tree(snapshot)))


def namespaces_in(configs: Iterable[dict[str, Any]]) -> list[str]:
    """Sorted distinct namespace shapes of some configs."""
    return sorted({ns_shape(c["configurable"].get("checkpoint_ns", "")) for c in configs})
