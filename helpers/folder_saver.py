"""A checkpointer of your own: one JSON file per checkpoint, blob and write, in a folder.

Chapter 16 builds this saver in four steps, each a subclass of the one before, and runs
each step in a cell first; each cell carries a ``# saved as helpers.folder_saver.<name>``
line, and tests/course/test_show_then_save.py keeps the two identical:

1. :class:`PutGetSaver`: ``put`` and ``get_tuple`` (and their async twins);
2. :class:`ListingSaver`: ``list`` with ``before``, ``limit`` and ``filter``;
3. :class:`WritesSaver`: ``put_writes``, so a failed step keeps its finished tasks' writes;
4. :class:`FolderSaver`: ``delete_thread``, and ``copy_thread`` (an extended capability).

The layout under ``root`` (names are ``urllib.parse.quote``-d, so any thread ID or
namespace is a valid file name, up to the file system's name limit of about 255 bytes)::

    threads/<thread_id>/ns-<checkpoint_ns>/checkpoints/<checkpoint_id>.json
                                          /blobs/<channel>.<version>.json
                                          /writes/<checkpoint_id>/<task_id>.<idx>.json

Every value goes through the saver's ``serde`` (a ``JsonPlusSerializer``, no pickle) and
is stored as ``{"type": ..., "base64": ...}``. Each file is written to a temporary name and
then renamed, so a reader never sees half a file. The async methods run the sync ones in
a worker thread (``asyncio.to_thread``): file calls block, and an event loop must not
block (the Agent Server's ``langgraph dev`` raises ``BlockingError`` when one does). A saver
on a network database would use its async driver instead. The saver assumes one process
writes a thread at a time.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import threading
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol


# shown in solutions/16_your_own_checkpointer.ipynb
class PutGetSaver(BaseCheckpointSaver):
    """Step 1: save a checkpoint (``put``) and read one back (``get_tuple``)."""

    def __init__(self, root: str | Path, *, serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)  # None: the default JsonPlusSerializer (no pickle)
        self.root = Path(root)

    # -- where things live ---------------------------------------------------------------
    def _thread_dir(self, thread_id: str) -> Path:
        return self.root / "threads" / quote(str(thread_id), safe="")

    def _ns_dir(self, thread_id: str, checkpoint_ns: str) -> Path:
        return self._thread_dir(thread_id) / ("ns-" + quote(checkpoint_ns, safe=""))

    def _checkpoint_file(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> Path:
        return self._ns_dir(thread_id, checkpoint_ns) / "checkpoints" / f"{checkpoint_id}.json"

    def _blob_file(self, thread_id: str, checkpoint_ns: str, channel: str, version: Any) -> Path:
        name = f"{quote(channel, safe='')}.{quote(str(version), safe='')}.json"
        return self._ns_dir(thread_id, checkpoint_ns) / "blobs" / name

    # -- files and values ------------------------------------------------------------------
    def _write_json(self, path: Path, doc: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        temporary.write_text(json.dumps(doc), encoding="utf-8")
        os.replace(temporary, path)  # atomic: readers see the old file or the new one

    def _read_json(self, path: Path) -> dict[str, Any] | None:
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None

    def encode(self, value: Any) -> dict[str, str]:
        kind, data = self.serde.dumps_typed(value)
        return {"type": kind, "base64": base64.b64encode(data).decode("ascii")}

    def decode(self, stored: dict[str, str]) -> Any:
        return self.serde.loads_typed((stored["type"], base64.b64decode(stored["base64"])))

    def checkpoint_ids(self, thread_id: str, checkpoint_ns: str) -> list[str]:
        """The namespace's checkpoint IDs, oldest first (uuid6 string order is time order)."""
        folder = self._ns_dir(thread_id, checkpoint_ns) / "checkpoints"
        return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []

    # -- the interface -----------------------------------------------------------------------
    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        thread_id = config["configurable"]["thread_id"]
        checkpoint_ns = config["configurable"].get("checkpoint_ns", "")
        values = checkpoint["channel_values"]
        for channel, version in new_versions.items():  # only the channels this step changed
            blob = self.encode(values[channel]) if channel in values else {"type": "empty"}
            self._write_json(self._blob_file(thread_id, checkpoint_ns, channel, version), blob)
        doc = {
            "parent_checkpoint_id": config["configurable"].get("checkpoint_id"),
            "checkpoint": self.encode({k: v for k, v in checkpoint.items() if k != "channel_values"}),
            "metadata": self.encode(get_checkpoint_metadata(config, metadata)),
        }
        self._write_json(self._checkpoint_file(thread_id, checkpoint_ns, checkpoint["id"]), doc)
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                 "checkpoint_id": checkpoint["id"]}}

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id = config["configurable"]["thread_id"]
        checkpoint_ns = config["configurable"].get("checkpoint_ns", "")
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is None:  # no ID asked for: the newest
            ids = self.checkpoint_ids(thread_id, checkpoint_ns)
            if not ids:
                return None
            checkpoint_id = ids[-1]
        return self._load_tuple(thread_id, checkpoint_ns, checkpoint_id)

    def _load_tuple(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> CheckpointTuple | None:
        doc = self._read_json(self._checkpoint_file(thread_id, checkpoint_ns, checkpoint_id))
        if doc is None:
            return None
        checkpoint = self.decode(doc["checkpoint"])
        values = {}
        for channel, version in checkpoint["channel_versions"].items():
            blob = self._read_json(self._blob_file(thread_id, checkpoint_ns, channel, version))
            if blob is not None and blob["type"] != "empty":
                values[channel] = self.decode(blob)
        parent_id = doc["parent_checkpoint_id"]
        return CheckpointTuple(
            config={"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                     "checkpoint_id": checkpoint_id}},
            checkpoint={**checkpoint, "channel_values": values},
            metadata=self.decode(doc["metadata"]),
            parent_config=({"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                             "checkpoint_id": parent_id}} if parent_id else None),
            pending_writes=self._pending_writes(thread_id, checkpoint_ns, checkpoint_id),
        )

    def _pending_writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> list[tuple[str, str, Any]]:
        return []  # step 3 stores writes

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)


# shown in solutions/16_your_own_checkpointer.ipynb
class ListingSaver(PutGetSaver):
    """Step 2: ``list`` a thread's checkpoints, newest first, with ``before``, ``limit``, ``filter``."""

    def thread_ids(self) -> list[str]:
        folder = self.root / "threads"
        return sorted(unquote(p.name) for p in folder.iterdir()) if folder.is_dir() else []

    def namespaces(self, thread_id: str) -> list[str]:
        folder = self._thread_dir(thread_id)
        return sorted(unquote(p.name[3:]) for p in folder.glob("ns-*")) if folder.is_dir() else []

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None, limit: int | None = None) -> Iterator[CheckpointTuple]:
        wanted = (config or {}).get("configurable", {})
        threads = [wanted["thread_id"]] if "thread_id" in wanted else self.thread_ids()
        before_id = get_checkpoint_id(before) if before else None
        found = 0
        for thread_id in threads:
            namespaces = [wanted["checkpoint_ns"]] if "checkpoint_ns" in wanted else self.namespaces(thread_id)
            for checkpoint_ns in namespaces:
                for checkpoint_id in reversed(self.checkpoint_ids(thread_id, checkpoint_ns)):
                    if wanted.get("checkpoint_id") and checkpoint_id != wanted["checkpoint_id"]:
                        continue
                    if before_id and checkpoint_id >= before_id:
                        continue
                    saved = self._load_tuple(thread_id, checkpoint_ns, checkpoint_id)
                    if saved is None:  # deleted while we were listing
                        continue
                    if filter and any(saved.metadata.get(k) != v for k, v in filter.items()):
                        continue
                    if limit is not None and found >= limit:
                        return
                    found += 1
                    yield saved

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None, limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(lambda: [*self.list(config, filter=filter, before=before, limit=limit)])
        for saved in found:
            yield saved


# shown in solutions/16_your_own_checkpointer.ipynb
class WritesSaver(ListingSaver):
    """Step 3: ``put_writes`` keeps each task's writes until the step's checkpoint is saved."""

    def _writes_dir(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> Path:
        return self._ns_dir(thread_id, checkpoint_ns) / "writes" / checkpoint_id

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        thread_id = config["configurable"]["thread_id"]
        checkpoint_ns = config["configurable"].get("checkpoint_ns", "")
        folder = self._writes_dir(thread_id, checkpoint_ns, config["configurable"]["checkpoint_id"])
        for position, (channel, value) in enumerate(writes):
            idx = WRITES_IDX_MAP.get(channel, position)  # __error__, __interrupt__, ...: fixed negative slots
            path = folder / f"{quote(task_id, safe='')}.{idx}.json"
            if idx >= 0 and path.exists():  # a task's regular writes are saved once
                continue
            self._write_json(path, {"task_id": task_id, "idx": idx, "channel": channel,
                                    "task_path": task_path, "value": self.encode(value)})

    def _pending_writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> list[tuple[str, str, Any]]:
        folder = self._writes_dir(thread_id, checkpoint_ns, checkpoint_id)
        docs = [self._read_json(p) for p in folder.glob("*.json")] if folder.is_dir() else []
        docs = sorted((d for d in docs if d), key=lambda d: writes_sort_key(d["task_path"], d["task_id"], d["idx"]))
        return [(d["task_id"], d["channel"], self.decode(d["value"])) for d in docs]

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)


# shown in solutions/16_your_own_checkpointer.ipynb
class FolderSaver(WritesSaver):
    """Step 4: ``delete_thread`` (every namespace) and ``copy_thread``: the finished saver."""

    def delete_thread(self, thread_id: str) -> None:
        shutil.rmtree(self._thread_dir(thread_id), ignore_errors=True)  # all namespaces, blobs, writes

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    def remove_checkpoint(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> None:
        """One checkpoint and its pending writes; its blobs stay (a newer checkpoint may share them)."""
        self._checkpoint_file(thread_id, checkpoint_ns, checkpoint_id).unlink(missing_ok=True)
        shutil.rmtree(self._writes_dir(thread_id, checkpoint_ns, checkpoint_id), ignore_errors=True)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        source = self._thread_dir(source_thread_id)
        if source.is_dir():  # IDs, versions and writes are per thread: the files copy as they are
            shutil.copytree(source, self._thread_dir(target_thread_id), dirs_exist_ok=True)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)


# shown in solutions/16_your_own_checkpointer.ipynb
class JournalSaver(FolderSaver):
    """FolderSaver with all pending writes of a checkpoint in one journal (JSON lines).

    Reading keeps, per slot ``(task_id, idx)``, the **last** line written for it.
    ``put_writes`` is exercise 16.3.
    """

    _append_lock = threading.Lock()  # parallel tasks append from several threads

    def journal(self, config: RunnableConfig) -> Path:
        wanted = config["configurable"]
        folder = self._ns_dir(wanted["thread_id"], wanted.get("checkpoint_ns", "")) / "journals"
        return folder / f"{wanted['checkpoint_id']}.jsonl"

    def read_journal(self, config: RunnableConfig) -> list[dict[str, Any]]:
        path = self.journal(config)
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []

    def append_journal(self, config: RunnableConfig, rows: list[dict[str, Any]]) -> None:
        path = self.journal(config)
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._append_lock, path.open("a", encoding="utf-8") as journal:
            journal.write("".join(json.dumps(row) + "\n" for row in rows))

    def _pending_writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> list[tuple[str, str, Any]]:
        config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                   "checkpoint_id": checkpoint_id}}
        slots = {(row["task_id"], row["idx"]): row for row in self.read_journal(config)}  # last line wins
        rows = sorted(slots.values(), key=lambda r: writes_sort_key(r["task_path"], r["task_id"], r["idx"]))
        return [(r["task_id"], r["channel"], self.decode(r["value"])) for r in rows]

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        raise NotImplementedError("JournalSaver.put_writes is exercise 16.3")
