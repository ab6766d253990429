"""Checks for chapter 16 (your own checkpointer): LangGraph's conformance suite is the check.

Each exercise is a function that the check plugs into a subclass of the chapter's saver
(``helpers.folder_saver``). The check runs the capability's part of the conformance
suite on that class (``helpers.conformance``), then one of the course's graphs on it,
and turns the result into the course's one line.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.serde.types import ERROR, INTERRUPT

from .. import conformance, delta_graphs, fare_lookup_graphs, folder_saver, travel_graphs
from .protocol import Fail, NotAttempted, exercise


def _probe(answer: Any, saver_class: type, *args: Any) -> None:
    """Call the learner's function once on an empty saver: a stub (returns ...) is not attempted."""
    if not callable(answer):
        raise Fail(f"expected a function, got {type(answer).__name__}")
    with tempfile.TemporaryDirectory(prefix="course-16-probe-") as tmp:
        try:
            result = answer(saver_class(tmp), *args)
        except Exception as exc:
            raise Fail(f"your function raised {type(exc).__name__} on an empty saver: {exc}") from None
    if result is Ellipsis:
        raise NotAttempted("your function still returns ...: write its body")


def _suite(saver_class: type, capability: str) -> None:
    ok, message = conformance.verdict(conformance.run_suite(saver_class, [capability]), [capability])
    if not ok:
        raise Fail(message)


def _chat_turns(saver: Any, thread_id: str, texts: Sequence[str]) -> Any:
    """Chapter 01's chat graph: one run per text, each with run_id 'turn-<n>' in its metadata."""
    chat = travel_graphs.build_chat_graph(saver)
    for n, text in enumerate(texts, start=1):
        chat.invoke({"messages": [HumanMessage(text)]},
                    {"configurable": {"thread_id": thread_id}, "metadata": {"run_id": f"turn-{n}"}})
    return chat


# -- 16.1 ------------------------------------------------------------------------------


def _with_delete_for_runs(answer: Any) -> type:
    class DeleteForRunsSaver(folder_saver.FolderSaver):
        def delete_for_runs(self, run_ids: Sequence[str]) -> None:
            answer(self, list(run_ids))

        async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
            await asyncio.to_thread(self.delete_for_runs, run_ids)

    return DeleteForRunsSaver


@exercise("16.1")
def check_delete_for_runs(answer: Any) -> str:
    _probe(answer, folder_saver.FolderSaver, ["no-such-run"])
    saver_class = _with_delete_for_runs(answer)
    _suite(saver_class, "delete_for_runs")
    with tempfile.TemporaryDirectory(prefix="course-16-check-") as tmp:
        saver = saver_class(tmp)
        chat = _chat_turns(saver, "trip-1", ["I'd like a window seat", "Which seat did I ask for?"])
        _chat_turns(saver, "trip-2", ["I'd like an aisle seat"])
        saver.delete_for_runs(["turn-2"])
        config = {"configurable": {"thread_id": "trip-1"}}
        left = [s.metadata.get("run_id") for s in chat.get_state_history(config)]
        if left != ["turn-1"] * 3:
            raise Fail(f"on chapter 01's chat thread, after deleting run 'turn-2' the history's run_ids are {left}; "
                       "expected turn-1's three checkpoints only")
        if len(chat.get_state(config).values["messages"]) != 2:
            raise Fail("after deleting run 'turn-2', get_state should show turn 1's two messages")
        other = chat.get_state({"configurable": {"thread_id": "trip-2"}})
        if other.metadata is None or other.metadata.get("run_id") != "turn-1":
            raise Fail("another thread's run 'turn-1' was touched: delete only the runs asked for")
    return "delete_for_runs passes the suite, and chapter 01's thread falls back to its first turn"


# -- 16.2 ------------------------------------------------------------------------------


def _with_prune(answer: Any) -> type:
    class PruneSaver(folder_saver.FolderSaver):
        def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
            answer(self, list(thread_ids), strategy)

        async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
            await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)

    return PruneSaver


@exercise("16.2")
def check_prune(answer: Any) -> str:
    _probe(answer, folder_saver.FolderSaver, ["no-such-thread"], "keep_latest")
    saver_class = _with_prune(answer)
    _suite(saver_class, "prune")
    with tempfile.TemporaryDirectory(prefix="course-16-check-") as tmp:
        saver = saver_class(tmp)
        chat = _chat_turns(saver, "trip-1", ["I'd like a window seat", "Which seat did I ask for?"])
        saver.prune(["trip-1"], strategy="keep_latest")
        config = {"configurable": {"thread_id": "trip-1"}}
        kept = list(chat.get_state_history(config))
        if len(kept) != 1:
            raise Fail(f"keep_latest left {len(kept)} checkpoints on chapter 01's two-turn thread; expected 1")
        _only_kept_blobs(saver, "trip-1")
        if travel_graphs.say(chat, "trip-1", "Which seat did I ask for?") != "You asked for a window seat.":
            raise Fail("after keep_latest the thread should still remember the window seat (its newest state)")
    _refuses_delta_threads(saver_class)
    return ("prune passes the suite, a pruned thread keeps only the blob files of its newest checkpoint and still "
            "remembers its newest state, and keep_latest refuses a DeltaChannel thread without pruning anything")


def _only_kept_blobs(saver: Any, thread_id: str) -> None:
    """After keep_latest, the namespace's blob files are exactly those its newest checkpoint names."""
    newest = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    named = {saver._blob_file(thread_id, "", channel, version)
             for channel, version in newest.checkpoint["channel_versions"].items()}
    left = set((saver._ns_dir(thread_id, "") / "blobs").glob("*.json"))
    if named - left:
        raise Fail(f"keep_latest deleted {len(named - left)} blob file(s) that the kept checkpoint names: "
                   "keep every blob its channel_versions name")
    if left - named:
        raise Fail(f"keep_latest left {len(left)} blob files on chapter 01's two-turn thread, and its one kept "
                   f"checkpoint names {len(named)}: remove_checkpoint keeps the blobs, so the old versions of "
                   "messages (each the whole list of its time, chapter 15) stay on disk; also delete the blob "
                   "files that no kept checkpoint names, as PostgresSaver.prune does")


def _refuses_delta_threads(saver_class: type) -> None:
    """keep_latest on [plain thread, DeltaChannel thread] must raise NotImplementedError and change nothing."""
    with tempfile.TemporaryDirectory(prefix="course-16-check-") as tmp:
        saver = saver_class(tmp)
        _chat_turns(saver, "trip-1", ["I'd like a window seat", "Which seat did I ask for?"])
        delta_chat = delta_graphs.build_delta_chat_graph(saver)
        for text in ("I'd like an aisle seat", "Which seat did I ask for?"):
            travel_graphs.say(delta_chat, "delta-1", text)
        before = {t: len(saver.checkpoint_ids(t, "")) for t in ("trip-1", "delta-1")}
        try:
            saver.prune(["trip-1", "delta-1"], strategy="keep_latest")
        except NotImplementedError:
            pass
        except Exception as exc:
            raise Fail(f"keep_latest on ['trip-1', 'delta-1'] raised {type(exc).__name__}: {exc}; 'delta-1' uses a "
                       "DeltaChannel, so raise NotImplementedError, as PostgresSaver.prune does") from None
        else:
            after = len(delta_chat.get_state({"configurable": {"thread_id": "delta-1"}}).values.get("messages", []))
            raise Fail(f"keep_latest on ['trip-1', 'delta-1'] returned, and 'delta-1' now rebuilds {after} of its 4 "
                       "messages: it uses a DeltaChannel (its checkpoints' metadata has "
                       "'counters_since_delta_snapshot'), so raise NotImplementedError and prune nothing")
        after = {t: len(saver.checkpoint_ids(t, "")) for t in ("trip-1", "delta-1")}
        if after != before:
            raise Fail(f"keep_latest raised NotImplementedError for 'delta-1', but the checkpoints went from {before} "
                       f"to {after}: check every listed thread first, and prune nothing when one uses a DeltaChannel")
        saver.prune(["delta-1"], strategy="delete")
        if "delta-1" in saver.thread_ids():
            raise Fail("strategy='delete' must remove a DeltaChannel thread too: only keep_latest refuses one")


# -- 16.3 ------------------------------------------------------------------------------


def _with_put_writes(answer: Any) -> type:
    class LearnerJournalSaver(folder_saver.JournalSaver):
        def put_writes(self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str,
                       task_path: str = "") -> None:
            answer(self, config, writes, task_id, task_path)

        async def aput_writes(self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str,
                              task_path: str = "") -> None:
            await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    return LearnerJournalSaver


def _slot_rules(saver_class: type) -> None:
    """The rules the suite does not test: a regular slot keeps its first value, a special one its last."""
    with tempfile.TemporaryDirectory(prefix="course-16-check-") as tmp:
        saver = saver_class(tmp)
        empty = {"v": 1, "id": "1f000000-0000-6000-8000-000000000000", "ts": "", "channel_values": {},
                 "channel_versions": {}, "versions_seen": {}, "updated_channels": None}
        config = saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, empty,
                           {"source": "loop", "step": 0}, {})
        saver.put_writes(config, [("fare", 420)], "task-a")
        saver.put_writes(config, [("fare", 999)], "task-a")
        saver.put_writes(config, [(ERROR, "first failure")], "task-a")
        saver.put_writes(config, [(ERROR, "second failure")], "task-a")
        saver.put_writes(config, [(INTERRUPT, "approve?")], "task-b")
        got = sorted((t, c, repr(v)) for t, c, v in saver.get_tuple(config).pending_writes)
        want = sorted([("task-a", "fare", "420"), ("task-a", ERROR, "'second failure'"),
                       ("task-b", INTERRUPT, "'approve?'")])
        if got != want:
            raise Fail(f"pending writes after fare 420, fare 999, two errors and an interrupt: {got}; expected {want} "
                       "(a task's regular write is saved once, its first value stays; __error__ and __interrupt__ "
                       "have fixed slots in WRITES_IDX_MAP, and a later write to such a slot replaces the earlier)")


@exercise("16.3")
def check_put_writes(answer: Any) -> str:
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c"}}
    _probe(answer, folder_saver.JournalSaver, config, [], "task-a", "")
    saver_class = _with_put_writes(answer)
    _suite(saver_class, "put_writes")
    _slot_rules(saver_class)
    with tempfile.TemporaryDirectory(prefix="course-16-check-") as tmp:
        counts = fare_lookup_graphs.resume_counts("sync", saver_class(Path(tmp)))
    if counts["pending"] != ["__error__", "seat"] or counts["calls"] != {"find_seat": 1, "quote_fare": 2}:
        raise Fail(f"chapter 06's failed lookup step on your saver: pending {counts['pending']}, calls over the "
                   f"failed run and the resume {counts['calls']}; expected ['__error__', 'seat'] and seat 1, "
                   "fare 2 (the finished seat lookup must not run again)")
    return "put_writes passes the suite, and chapter 06's resume skips the finished seat lookup"
