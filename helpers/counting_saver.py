"""A checkpointer wrapper that counts (and can slow down) calls to a real saver.

``CountingSaver(inner)`` behaves exactly like ``inner`` (InMemorySaver, SqliteSaver, ...)
and counts how often the graph runtime calls each method of the saver interface, which
makes visible what happens behind ``invoke``: how many ``put`` / ``put_writes`` per run and
per durability mode, and how often it asks for a new channel version
(``get_next_version``). ``delay`` adds a fixed latency to every write, like a remote database
would, for crash experiments where timing matters.

What it supports, by LangGraph's conformance suite (chapter 16; tests/helpers/test_folder_saver.py
runs it): around an ``InMemorySaver`` it passes all five base capabilities (``put``,
``put_writes``, ``get_tuple``, ``list``, ``delete_thread``), and the suite reports the three
extended ones, ``copy_thread``, ``delete_for_runs`` and ``prune``, as not implemented:
``CountingSaver`` forwards only their sync methods to ``inner`` (``InMemorySaver`` raises
``NotImplementedError`` in all three), not ``acopy_thread``, ``adelete_for_runs`` and
``aprune``, which the suite and the Agent Server call.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

COUNTED = ("get_tuple", "list", "put", "put_writes", "delete_thread")


class CountingSaver(BaseCheckpointSaver):
    """Delegate every saver call to ``inner`` and count it (thread-safe)."""

    def __init__(self, inner: BaseCheckpointSaver, *, delay: float = 0.0) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner
        self.delay = delay
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _count(self, name: str) -> None:
        with self._lock:
            self.calls[name] += 1

    def counts(self, names: Sequence[str] = COUNTED) -> dict[str, int]:
        """Calls per interface method in ``names``, every one listed (zero when never called).

        Besides :data:`COUNTED`, the names ``get_next_version``, ``delete_for_runs``,
        ``copy_thread`` and ``prune`` are counted too.
        """
        with self._lock:
            return {name: self.calls[name] for name in names}

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()

    # -- sync interface ---------------------------------------------------------------
    def get_tuple(self, config: dict[str, Any]) -> CheckpointTuple | None:
        self._count("get_tuple")
        return self.inner.get_tuple(config)

    def list(self, config: dict[str, Any] | None, **kwargs: Any) -> Iterator[CheckpointTuple]:
        self._count("list")
        return self.inner.list(config, **kwargs)

    def put(self, config: dict[str, Any], checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> dict[str, Any]:
        self._count("put")
        if self.delay:
            time.sleep(self.delay)  # simulated network latency, not synchronisation
        return self.inner.put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: dict[str, Any], writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        self._count("put_writes")
        if self.delay:
            time.sleep(self.delay)
        return self.inner.put_writes(config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        self._count("delete_thread")
        return self.inner.delete_thread(thread_id)

    def get_next_version(self, current: Any, channel: Any = None) -> Any:
        self._count("get_next_version")
        return self.inner.get_next_version(current, channel)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._count("delete_for_runs")
        return self.inner.delete_for_runs(run_ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._count("copy_thread")
        return self.inner.copy_thread(source_thread_id, target_thread_id)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._count("prune")
        return self.inner.prune(thread_ids, strategy=strategy)

    # -- async interface: same counts, so ainvoke can be measured too ----------------------
    async def aget_tuple(self, config: dict[str, Any]) -> CheckpointTuple | None:
        self._count("get_tuple")
        return await self.inner.aget_tuple(config)

    async def alist(self, config: dict[str, Any] | None, **kwargs: Any) -> AsyncIterator[CheckpointTuple]:
        self._count("list")
        async for item in self.inner.alist(config, **kwargs):
            yield item

    async def aput(self, config: dict[str, Any], checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> dict[str, Any]:
        self._count("put")
        return await self.inner.aput(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: dict[str, Any], writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        self._count("put_writes")
        return await self.inner.aput_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        self._count("delete_thread")
        return await self.inner.adelete_thread(thread_id)
