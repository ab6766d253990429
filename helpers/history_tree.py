"""A thread's history as a tree: checkpoints are nodes, parent links are edges.

A thread's checkpoints do not form a list. Every checkpoint names its parent, and replaying
from an old checkpoint, ``update_state`` on an old checkpoint, or new input sent to an old
checkpoint all add a *second* child to that parent: a branch. This module reads a thread's
history once and gives it back as a :class:`HistoryTree`:

* every checkpoint gets a stable label, ``C0`` for the oldest, ``C1`` for the next, ... (the
  same labels as :func:`helpers.checkpoints.print_history`; ids sort in time order, so a
  label never changes when new checkpoints are added);
* :meth:`HistoryTree.edges` lists ``(parent, child)`` label pairs;
* :meth:`HistoryTree.branch` follows parent links from a checkpoint (by default the head,
  the one ``get_state`` returns) back to the root: the history *that state actually has*;
* :meth:`HistoryTree.written_by` says which node wrote a key into a checkpoint (from the
  results of the tasks that ran from its parent), which turns history into an audit trail;
* :func:`format_edges` prints the tree as text and :func:`plot_history_tree` draws it with
  matplotlib and prints the same edges (nbval does not compare images, it compares text).

Raw checkpoint ids never appear in any output; :meth:`HistoryTree.config` hands back the
config of a labelled checkpoint for ``invoke`` / ``update_state``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from langgraph.graph.state import CompiledStateGraph
from matplotlib.axes import Axes

from .checkpoints import checkpoint_id, label_ids, thread_config

SOURCE_COLORS = {"input": "#4c72b0", "loop": "#8c8c8c", "fork": "#dd8452", "update": "#55a868"}
OTHER_COLOR = "#c44e52"


@dataclass(frozen=True)
class TreeNode:
    """One checkpoint of the tree. ``lane`` is its row in the plot (0 = the oldest branch)."""

    label: str
    step: int | None
    source: str | None
    next: tuple[str, ...]
    parent: str | None
    children: tuple[str, ...]
    lane: int
    values: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    tasks: tuple[tuple[str, Any], ...] = field(default=(), repr=False, compare=False)
    config: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def describe(self) -> str:
        """``'C6 fork step 4'``: the label with its metadata, for printing."""
        return f"{self.label} {self.source} step {self.step}"


@dataclass(frozen=True)
class HistoryTree:
    """The checkpoints of one thread (root namespace), keyed by label, oldest first."""

    thread_id: str
    nodes: Mapping[str, TreeNode]
    head: str | None

    def __getitem__(self, label: str) -> TreeNode:
        try:
            return self.nodes[label]
        except KeyError:
            raise KeyError(f"no checkpoint {label!r} in thread {self.thread_id!r}; "
                           f"labels are {', '.join(self.nodes) or 'none'}") from None

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[TreeNode]:
        return iter(self.nodes.values())

    @property
    def labels(self) -> list[str]:
        return list(self.nodes)

    def edges(self) -> list[tuple[str, str]]:
        """``(parent, child)`` label pairs, in the order the children were written."""
        return [(n.parent, n.label) for n in self.nodes.values() if n.parent is not None]

    def roots(self) -> list[str]:
        return [n.label for n in self.nodes.values() if n.parent is None]

    def leaves(self) -> list[str]:
        """Checkpoints without children: the tip of every branch."""
        return [n.label for n in self.nodes.values() if not n.children]

    @property
    def lanes(self) -> int:
        return 1 + max((n.lane for n in self.nodes.values()), default=-1)

    def branch(self, label: str | None = None) -> list[TreeNode]:
        """The checkpoints from the root to ``label`` (default: the head), following parents."""
        label = self.head if label is None else label
        if label is None:
            return []
        chain, seen = [], set()
        while label is not None and label not in seen:
            seen.add(label)
            node = self[label]
            chain.append(node)
            label = node.parent if node.parent in self.nodes else None
        return chain[::-1]

    def config(self, label: str) -> dict[str, Any]:
        """The config (thread_id, checkpoint_ns, checkpoint_id) of ``label``, for invoke/update_state."""
        return {"configurable": dict(self[label].config.get("configurable", {}))}

    def label_of(self, config: Mapping[str, Any] | None) -> str | None:
        """The label of the checkpoint a config points to (None if it has no checkpoint_id)."""
        wanted = checkpoint_id(config) if config else None
        for node in self.nodes.values():
            if checkpoint_id(node.config) == wanted:
                return node.label
        return None

    def written_by(self, label: str, key: str) -> str:
        """Who put ``key``'s value into checkpoint ``label``.

        * ``update_state`` for an update checkpoint (it was written from outside the graph);
        * ``fork`` for a fork checkpoint (a copy of its parent);
        * otherwise the name(s) of the task(s) that ran from the parent checkpoint and
          returned ``key`` (``__start__`` is the input); ``-`` if none did.
        """
        node = self[label]
        if node.source == "update":
            return "update_state"
        if node.source == "fork":
            return "fork"
        if node.parent is None or node.parent not in self.nodes:
            return "-"
        names = sorted({name for name, result in self.nodes[node.parent].tasks
                        if isinstance(result, Mapping) and key in result})
        return ",".join(names) or "-"


def history_tree(graph: CompiledStateGraph, config: Mapping[str, Any]) -> HistoryTree:
    """Read the whole history of the thread in ``config`` (any checkpoint_id is ignored).

    ``graph`` is a compiled graph with a checkpointer. The head is what
    ``graph.get_state(thread)`` returns: the newest checkpoint of the thread.
    """
    thread = thread_config(dict(config))
    snapshots = sorted(graph.get_state_history(thread), key=lambda s: checkpoint_id(s.config))
    labels = label_ids(checkpoint_id(s.config) for s in snapshots)
    parents = {labels[checkpoint_id(s.config)]: labels.get(checkpoint_id(s.parent_config)) for s in snapshots}
    children: dict[str, list[str]] = {label: [] for label in parents}
    for child, parent in parents.items():
        if parent is not None:
            children[parent].append(child)
    lanes = assign_lanes(parents)
    nodes = {}
    for snap in snapshots:
        label = labels[checkpoint_id(snap.config)]
        values = snap.values if isinstance(snap.values, Mapping) else {"value": snap.values}
        nodes[label] = TreeNode(
            label=label, step=snap.metadata.get("step"), source=snap.metadata.get("source"),
            next=tuple(snap.next), parent=parents[label], children=tuple(children[label]), lane=lanes[label],
            values=dict(values), tasks=tuple((t.name, t.result) for t in snap.tasks), config=snap.config)
    head = graph.get_state(thread) if snapshots else None
    return HistoryTree(str(thread["configurable"].get("thread_id")), nodes,
                       labels.get(checkpoint_id(head.config)) if head is not None else None)


def assign_lanes(parents: Mapping[str, str | None]) -> dict[str, int]:
    """Rows for a plot: a first child stays in its parent's lane, each later child opens a new one.

    ``parents`` maps label -> parent label, in time order (C0, C1, ...).
    """
    children: dict[str | None, list[str]] = {}
    for label, parent in parents.items():
        children.setdefault(parent if parent in parents else None, []).append(label)
    lanes: dict[str, int] = {}
    next_lane = 0
    stack: list[tuple[str, int]] = []
    for root in reversed(children.get(None, [])):
        stack.append((root, -1))
    while stack:
        label, lane = stack.pop()
        if lane < 0:
            lane, next_lane = next_lane, next_lane + 1
        lanes[label] = lane
        kids = children.get(label, [])
        # push later children first so the first child is laid out (and keeps the lane) first
        for position, kid in reversed(list(enumerate(kids))):
            stack.append((kid, lane if position == 0 else -1))
    return lanes


def format_edges(tree: HistoryTree, only: Iterable[str] | None = None) -> str:
    """One line per checkpoint: ``parent -> child`` with the child's source and step; head marked.

    ``only`` restricts the lines to some child labels (e.g. the newest few).
    """
    wanted = None if only is None else set(only)
    rows = []
    for node in tree:
        if wanted is not None and node.label not in wanted:
            continue
        link = f"{node.parent or '(root)':>6} -> {node.label:<4}"
        mark = "  <- head" if node.label == tree.head else ""
        rows.append(f"{link} {node.source or '-':<6} step {node.step}{mark}")
    return "\n".join(rows)


def lane_names(tree: HistoryTree) -> list[str]:
    """``main`` for the first lane, ``from C4`` for a lane that branches off C4."""
    names = []
    for lane in range(tree.lanes):
        start = next(n for n in tree if n.lane == lane).parent
        names.append("main" if start is None else f"from {start}")
    return names


def format_branches(tree: HistoryTree) -> str:
    """One line per lane: where it starts and the checkpoints on it, e.g. ``from C4: C6 fork 4, C7 loop 5``."""
    lines = []
    for lane, name in enumerate(lane_names(tree)):
        members = [n for n in tree if n.lane == lane]
        lines.append(f"{name:>9}: " + ", ".join(f"{n.label} {n.source} {n.step}" for n in members))
    return "\n".join(lines)


def plot_history_tree(graph: CompiledStateGraph | HistoryTree, config: Mapping[str, Any] | None = None, *,
                      ax: Axes | None = None,
                      figsize: tuple[float, float] = (7, 3), title: str | None = None,
                      show_edges: bool = True) -> HistoryTree:
    """Draw the thread's checkpoint tree (x = step, one row per branch) and print its edges.

    ``graph`` may also be a ready :class:`HistoryTree` (then ``config`` is not needed).
    Nodes are coloured by ``source``; the head has a red ring. Returns the tree.
    """
    import matplotlib.pyplot as plt

    tree = graph if isinstance(graph, HistoryTree) else history_tree(graph, config or {})
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    where = {n.label: (n.step if n.step is not None else 0, -n.lane) for n in tree}
    for parent, child in tree.edges():
        (x0, y0), (x1, y1) = where[parent], where[child]
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                    arrowprops={"arrowstyle": "-|>", "color": "#555555", "shrinkA": 9, "shrinkB": 9, "lw": 1})
    for node in tree:
        x, y = where[node.label]
        ax.scatter([x], [y], s=260, color=SOURCE_COLORS.get(node.source or "", OTHER_COLOR), zorder=3,
                   edgecolors="#d62728" if node.label == tree.head else "white",
                   linewidths=2.5 if node.label == tree.head else 1)
        ax.annotate(node.label, (x, y), xytext=(0, 11), textcoords="offset points", ha="center", fontsize=8)
    for source, color in SOURCE_COLORS.items():
        if any(n.source == source for n in tree):
            ax.scatter([], [], s=60, color=color, label=source)
    ax.scatter([], [], s=60, color="white", edgecolors="#d62728", linewidths=2, label="head")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
    steps = [x for x, _ in where.values()]
    if steps:
        ax.set_xticks(range(min(steps), max(steps) + 1))
        ax.set_xlim(min(steps) - 0.6, max(steps) + 0.6)
    ax.set_yticks([-lane for lane in range(tree.lanes)], lane_names(tree))
    ax.set_ylim(-tree.lanes + 0.4, 0.7)
    ax.set_xlabel("step (metadata)")
    ax.set_title(title or f"checkpoints of thread {tree.thread_id!r}", fontsize=10)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if ax.figure is not None:
        ax.figure.tight_layout()
    if show_edges:
        print(format_edges(tree))
    return tree


def config_of(graph: CompiledStateGraph, config: Mapping[str, Any], label: str) -> dict[str, Any]:
    """The config of checkpoint ``label`` (``C0``, ``C1``, ...) of the thread in ``config``."""
    return history_tree(graph, config).config(label)


def labels_of(graph: CompiledStateGraph, config: Mapping[str, Any],
              configs: Iterable[Mapping[str, Any] | None]) -> list[str | None]:
    """Labels of several configs at once (e.g. what ``update_state`` returned)."""
    tree = history_tree(graph, config)
    return [tree.label_of(c) for c in configs]
