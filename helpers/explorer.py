"""A checkpoint explorer: pick a thread, step through its checkpoints, read each one.

Works with any checkpointer (InMemorySaver, SqliteSaver, PostgresSaver, ...) in any chapter::

    from helpers import explorer
    explorer.explore(saver)                    # or a compiled graph: its checkpointer, exact `next`
    explorer.explore(saver, "trip-1")          # start on one thread, at its head
    explorer.explore(saver, "trip-1", "C4")    # ... at one checkpoint

An explorer shows a **snapshot**: the saver as it was when the explorer was made. Later runs
on the same saver do not change it (so a cell's widget keeps showing what that cell asked
for, also after "Run All"); ``refresh()`` or the widget's "re-read" button reads the saver
again. Each cell that wants a different thread or checkpoint makes its own explorer.

A live widget cannot survive saving and reopening a notebook (the kernel that held it is
gone: JupyterLab then says "Error displaying widget: model not found"). So displaying an
explorer first prints a plain-text line that names what the widget shows and says to re-run
the cell to get the interactive explorer back.

The widget is a thin shell around plain, tested functions:

* :func:`threads_in` -- the thread ids a saver holds (sorted);
* :func:`checkpoint_views` -- one :class:`CheckpointView` per checkpoint of a thread, oldest
  first, labelled ``C0, C1, ...`` like :func:`helpers.checkpoints.print_history`;
* :func:`render_text` / :func:`render_html` -- one view as text / HTML;
* :func:`render_listing` -- a thread's checkpoints on one line, the selected one in brackets.

A view shows values, ``next``, metadata (source, step, other keys), the pending writes
stored with the checkpoint, and the parent/children links. Nothing volatile is shown: no
raw checkpoint or task ids, no timestamps, no channel versions, no message ids.

Given only a saver, ``next`` is read from the checkpoint's channels (``__start__`` means
the input is pending, ``branch:to:X`` means node ``X`` is): exact for graphs built from
edges and conditional edges. A write's task is named when it can be known for sure (one
pending node and one task), ``-`` otherwise. Given a graph, both come from ``get_state``.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets
from IPython.display import display
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from .checkpoints import checkpoint_id, label_ids

INTERNAL_PREFIXES = ("__", "branch:to:")
VALUE_WIDTH = 72


@dataclass(frozen=True)
class CheckpointView:
    """What the explorer shows for one checkpoint (all fields are stable, printable text)."""

    thread_id: str
    label: str
    index: int
    total: int
    step: int | None
    source: str | None
    next: tuple[str, ...]
    parent: str | None
    children: tuple[str, ...]
    values: tuple[tuple[str, str], ...]
    internal: tuple[str, ...]
    pending_writes: tuple[tuple[str, str, str], ...]
    metadata: tuple[tuple[str, str], ...]
    is_head: bool

    @property
    def heading(self) -> str:
        head = " (head)" if self.is_head else ""
        return (f"thread {self.thread_id!r} · {self.label}{head} · checkpoint {self.index + 1} of {self.total}"
                f" · step {self.step} · source {self.source}")


Source = BaseCheckpointSaver | CompiledStateGraph
"""What the explorer reads: a checkpointer, or a compiled graph with one."""


def saver_of(source: Source) -> BaseCheckpointSaver:
    """The checkpointer behind ``source`` (a saver, or a compiled graph with one)."""
    if isinstance(source, CompiledStateGraph):
        if not isinstance(source.checkpointer, BaseCheckpointSaver):
            raise ValueError("this graph has no checkpointer of its own: compile it with one, or pass the saver")
        return source.checkpointer
    if isinstance(source, BaseCheckpointSaver):
        return source
    raise TypeError(f"expected a checkpointer or a compiled graph, got {type(source).__name__}")


def threads_in(source: Source) -> list[str]:
    """The thread ids with at least one checkpoint in the saver (or graph's saver), sorted."""
    saver = saver_of(source)
    return sorted({str(t.config["configurable"]["thread_id"]) for t in saver.list(None)})


def short(value: Any, width: int = VALUE_WIDTH) -> str:
    """A stable one-line text for a value: messages as ``type: content``, long text cut."""
    if isinstance(value, (list, tuple)) and value and all(_is_message(v) for v in value):
        text = " | ".join(_message_text(v) for v in value)
    elif _is_message(value):
        text = _message_text(value)
    elif type(value).__name__ == "Interrupt" and hasattr(value, "value"):
        text = f"Interrupt(value={value.value!r})"  # its id is a random-looking hash
    elif isinstance(value, (list, tuple)):
        inner = ", ".join(short(v, width) for v in value)
        text = f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    elif isinstance(value, Mapping):
        items = sorted(value.items(), key=lambda kv: str(kv[0]))
        text = "{" + ", ".join(f"{k!r}: {short(v, width)}" for k, v in items) + "}"
    else:
        text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def value_lines(key: str, value: Any) -> str:
    """A state value for display; a message list becomes a count plus one line per message."""
    if isinstance(value, (list, tuple)) and value and all(_is_message(v) for v in value):
        return f"{len(value)} message{'s' if len(value) != 1 else ''}\n" + "\n".join(f"  {short(m)}" for m in value)
    return short(value)


def pending_from_channels(channel_values: Mapping[str, Any]) -> tuple[str, ...]:
    """``next`` as far as a saver alone can tell: the input and the ``branch:to:X`` channels."""
    nodes = ["__start__"] if "__start__" in channel_values else []
    nodes += sorted(k[len("branch:to:"):] for k in channel_values if k.startswith("branch:to:"))
    return tuple(nodes)


def checkpoint_views(source: Source, thread_id: str, checkpoint_ns: str = "") -> list[CheckpointView]:
    """Every checkpoint of ``thread_id`` (in ``checkpoint_ns``, default the root), oldest first."""
    saver = saver_of(source)
    graph = source if source is not saver else None
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}}
    tuples = sorted(saver.list(config), key=lambda t: checkpoint_id(t.config))
    tuples = [t for t in tuples if t.config["configurable"].get("checkpoint_ns", "") == checkpoint_ns]
    labels = label_ids(checkpoint_id(t.config) for t in tuples)
    children: dict[str, list[str]] = {label: [] for label in labels.values()}
    for t in tuples:
        parent = labels.get(checkpoint_id(t.parent_config))
        if parent is not None:
            children[parent].append(labels[checkpoint_id(t.config)])
    head = labels.get(max(labels), None) if labels else None
    views = []
    for index, t in enumerate(tuples):
        label = labels[checkpoint_id(t.config)]
        channels = t.checkpoint.get("channel_values", {})
        snapshot = graph.get_state(t.config) if graph is not None else None
        if snapshot is not None:
            values = snapshot.values if isinstance(snapshot.values, Mapping) else {"value": snapshot.values}
            pending = tuple(snapshot.next)
            task_names = {task.id: task.name for task in snapshot.tasks}
        else:
            values = {k: v for k, v in channels.items() if not k.startswith(INTERNAL_PREFIXES)}
            pending = pending_from_channels(channels)
            task_ids = {w[0] for w in t.pending_writes or ()}
            task_names = {task_ids.pop(): pending[0]} if len(task_ids) == 1 and len(pending) == 1 else {}
        writes = sorted((task_names.get(task_id, "-"), channel, short(value))
                        for task_id, channel, value in (t.pending_writes or ()))
        metadata = tuple((str(k), short(v)) for k, v in sorted(t.metadata.items(), key=lambda kv: str(kv[0]))
                         if k not in ("source", "step") and not (k == "parents" and not v))
        views.append(CheckpointView(
            thread_id=thread_id, label=label, index=index, total=len(tuples),
            step=t.metadata.get("step"), source=t.metadata.get("source"), next=pending,
            parent=labels.get(checkpoint_id(t.parent_config)), children=tuple(children[label]),
            values=tuple((str(k), value_lines(str(k), v)) for k, v in sorted(values.items(), key=_key_text)),
            internal=tuple(sorted(k for k in channels if k.startswith(INTERNAL_PREFIXES))),
            pending_writes=tuple(writes), metadata=metadata, is_head=label == head))
    return views


def render_text(view: CheckpointView) -> str:
    """One checkpoint as plain text (what a notebook prints next to the widget)."""
    lines = [view.heading,
             f"parent: {view.parent or '-'}   children: {', '.join(view.children) or '-'}",
             f"next: {view.next}"]
    lines.append("values:" if view.values else "values: {} (empty)")
    for key, text in view.values:
        first, *rest = text.split("\n")
        lines.append(f"  {key}: {first}")
        lines += [f"  {line}" for line in rest]
    lines.append(f"internal channels: {', '.join(view.internal) or '-'}")
    lines.append("pending writes:" if view.pending_writes else "pending writes: none")
    lines += [f"  {task} -> {channel}: {value}" for task, channel, value in view.pending_writes]
    if view.metadata:
        lines.append("other metadata: " + ", ".join(f"{k}={v}" for k, v in view.metadata))
    return "\n".join(lines)


def render_html(view: CheckpointView) -> str:
    """One checkpoint as a small HTML table (what the widget shows)."""
    esc = html.escape

    def row(name: str, content: str) -> str:
        head = f"<th style='text-align:left;vertical-align:top;padding-right:1em'>{esc(name)}</th>"
        return f"<tr>{head}<td>{content}</td></tr>"

    def pre(text: str) -> str:
        return f"<pre style='margin:0'>{esc(text)}</pre>"

    values = pre("\n".join(f"{k}: {t}" for k, t in view.values)) if view.values else "<i>empty</i>"
    writes = (pre("\n".join(f"{t} -> {c}: {v}" for t, c, v in view.pending_writes))
              if view.pending_writes else "<i>none</i>")
    rows = [row("checkpoint", esc(view.label + (" (head)" if view.is_head else ""))
                + f" <span style='color:#777'>({view.index + 1} of {view.total})</span>"),
            row("source / step", esc(f"{view.source} / {view.step}")),
            row("parent", esc(view.parent or "-")),
            row("children", esc(", ".join(view.children) or "-")),
            row("next", esc(str(view.next))),
            row("values", values),
            row("internal channels", esc(", ".join(view.internal) or "-")),
            row("pending writes", writes)]
    if view.metadata:
        rows.append(row("other metadata", esc(", ".join(f"{k}={v}" for k, v in view.metadata))))
    return f"<h4 style='margin:0.3em 0'>thread {esc(repr(view.thread_id))}</h4><table>{''.join(rows)}</table>"


def render_listing(views: Sequence[CheckpointView], selected: str | None = None) -> str:
    """``trip-1: C0 C1 [C2] C3`` -- the thread's checkpoints on one line, ``selected`` bracketed."""
    if not views:
        return "(no checkpoints)"
    labels = [f"[{v.label}]" if v.label == selected else v.label for v in views]
    return f"{views[0].thread_id}: " + " ".join(labels)


class _ExplorerBase:
    """The state machine of the explorer, without any widget (unit-testable).

    It reads the saver once (a snapshot of every thread) and then only moves through that
    snapshot; :meth:`refresh` reads the saver again.
    """

    def __init__(self, source: Source, thread_id: str | None = None, checkpoint: str | None = None) -> None:
        self.source = source
        self._read()
        if thread_id is not None and thread_id not in self.threads:
            raise ValueError(f"thread {thread_id!r} has no checkpoints here; threads: {self.threads}")
        self.thread_id = thread_id or (self.threads[0] if self.threads else None)
        self.views: list[CheckpointView] = []
        self.selected: str | None = None
        self._show_thread()
        if checkpoint is not None:
            _ExplorerBase.select(self, checkpoint)

    def _read(self) -> None:
        self.threads = threads_in(self.source)
        self._snapshot = {thread: checkpoint_views(self.source, thread) for thread in self.threads}

    def _show_thread(self) -> None:
        self.views = self._snapshot.get(self.thread_id, []) if self.thread_id else []
        heads = [v.label for v in self.views if v.is_head]
        self.selected = heads[0] if heads else None

    @property
    def view(self) -> CheckpointView | None:
        return next((v for v in self.views if v.label == self.selected), None)

    def select_thread(self, thread_id: str) -> None:
        """Show ``thread_id`` (from the snapshot), at its head."""
        if thread_id not in self.threads:
            raise ValueError(f"unknown thread {thread_id!r}; threads: {self.threads}")
        self.thread_id = thread_id
        self._show_thread()

    def select(self, label: str) -> None:
        """Show checkpoint ``label`` of the current thread (what the slider does)."""
        if label not in [v.label for v in self.views]:
            raise ValueError(f"no checkpoint {label!r} in thread {self.thread_id!r}")
        self.selected = label

    def go_parent(self) -> None:
        if self.view is not None and self.view.parent is not None:
            self.select(self.view.parent)

    def refresh(self) -> None:
        """Read the saver again (after new runs), keeping thread and selection when possible."""
        thread, selected = self.thread_id, self.selected
        self._read()
        self.thread_id = thread if thread in self.threads else (self.threads[0] if self.threads else None)
        self._show_thread()
        if selected in [v.label for v in self.views] and self.thread_id == thread:
            self.selected = selected

    def listing(self) -> str:
        return render_listing(self.views, self.selected)

    def text(self) -> str:
        """The listing line plus the selected checkpoint as text."""
        view = self.view
        return self.listing() + ("\n" + render_text(view) if view else "")

    def summary(self) -> str:
        return (f"CheckpointExplorer(threads={len(self.threads)}, thread={self.thread_id!r}, "
                f"checkpoint={self.selected!r}, of={len(self.views)})")

    def fallback_note(self) -> str:
        """The plain text shown above the widget: what it shows, and what to do if it does not render."""
        where = (f"thread {self.thread_id!r} at {self.selected} ({len(self.views)} checkpoints)"
                 if self.view else "no checkpoints")
        return (f"Checkpoint explorer: {where}.\n"
                "No widget below, or 'Error displaying widget: model not found'? Re-run this cell to get the "
                "interactive explorer (a saved notebook keeps no live widgets).")


class CheckpointExplorer(_ExplorerBase, widgets.VBox):
    """The widget: thread dropdown, checkpoint slider, parent and re-read buttons, and the HTML view.

    Displayed, it shows a plain-text note first (:meth:`fallback_note`), then itself. Its
    repr (the text a notebook stores for the widget) is a stable one-line summary.
    """

    def __init__(self, source: Source, thread_id: str | None = None, checkpoint: str | None = None) -> None:
        widgets.VBox.__init__(self)
        self._updating = False
        _ExplorerBase.__init__(self, source, thread_id, checkpoint)
        self._thread_box = widgets.Dropdown(description="thread", options=self.threads, value=self.thread_id)
        self._slider = widgets.SelectionSlider(description="checkpoint", options=[""], continuous_update=False)
        self._parent_button = widgets.Button(description="go to parent", icon="arrow-up")
        self._reread_button = widgets.Button(description="re-read saver", icon="refresh",
                                             tooltip="this explorer shows the saver as it was; read it again")
        self._listing = widgets.HTML()
        self._pane = widgets.HTML()
        self._thread_box.observe(self._on_thread, names="value")
        self._slider.observe(self._on_slider, names="value")
        self._parent_button.on_click(lambda _: self.go_parent())
        self._reread_button.on_click(lambda _: self.refresh())
        self.children = [widgets.HBox([self._thread_box, self._slider, self._parent_button, self._reread_button]),
                         self._listing, self._pane]
        self._sync()

    def _sync(self) -> None:
        if not hasattr(self, "_pane"):
            return  # still being built
        labels = [v.label for v in self.views] or [""]
        self._updating = True
        try:
            if list(self._thread_box.options) != self.threads:
                self._thread_box.options = self.threads
            self._thread_box.value = self.thread_id
            if list(self._slider.options) != labels:
                self._slider.options = labels
            self._slider.value = self.selected or labels[0]
        finally:
            self._updating = False
        self._listing.value = f"<code>{html.escape(self.listing())}</code>"
        self._pane.value = render_html(self.view) if self.view else "<i>no checkpoints</i>"
        self._parent_button.disabled = self.view is None or self.view.parent is None

    def _on_thread(self, change: Mapping[str, Any]) -> None:
        if not self._updating and change["new"]:
            self.select_thread(change["new"])

    def _on_slider(self, change: Mapping[str, Any]) -> None:
        if not self._updating and change["new"]:
            self.select(change["new"])

    def select(self, label: str) -> None:
        _ExplorerBase.select(self, label)
        self._sync()

    def select_thread(self, thread_id: str) -> None:
        _ExplorerBase.select_thread(self, thread_id)
        self._sync()

    def refresh(self) -> None:
        _ExplorerBase.refresh(self)
        self._sync()

    def display_bundles(self) -> list[dict[str, Any]]:
        """What displaying the explorer publishes: the plain-text note, then the widget itself."""
        return [{"text/plain": self.fallback_note()}, self._repr_mimebundle_()]

    def _ipython_display_(self) -> None:
        for bundle in self.display_bundles():
            display(bundle, raw=True)

    def __repr__(self) -> str:
        return self.summary()


def explore(source: Source, thread_id: str | None = None, checkpoint: str | None = None) -> CheckpointExplorer:
    """The interactive explorer for a saver or a compiled graph (any chapter, any saver).

    It shows ``thread_id`` (default: the first thread) at ``checkpoint`` (a label such as
    ``"C4"``; default: the thread's head), from a snapshot of the saver taken now. Display
    it as a cell's last expression. Print ``.text()`` for the selected checkpoint as text
    (nbval compares text, not widget views). ``.select("C4")`` / ``.select_thread(...)``
    drive it from code; a cell that wants another view should make its own explorer.
    """
    return CheckpointExplorer(source, thread_id, checkpoint)


def _is_message(value: Any) -> bool:
    named_like_one = type(value).__name__.endswith(("Message", "MessageChunk"))
    return hasattr(value, "type") and hasattr(value, "content") and named_like_one


def _key_text(item: tuple[Any, Any]) -> str:
    return str(item[0])


def _message_text(message: Any) -> str:
    return f"{message.type}: {message.content}"


def describe_views(views: Iterable[CheckpointView]) -> str:
    """Compact table of several views: label, step, source, next, parent (for quick prints)."""
    from .text_tables import format_table

    return format_table(({"label": v.label, "step": v.step, "source": v.source, "next": v.next,
                          "parent": v.parent, "writes": len(v.pending_writes)} for v in views),
                        ["label", "step", "source", "next", "parent", "writes"])
