"""Checks for chapter 14 (your own persistent service). None of them needs a server.

14.2 runs the learner's async function on its own event loop in a helper thread: a check
is called from a notebook cell, which already runs on the kernel's loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import re
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from psycopg.rows import dict_row

from ..persistent_service import ServiceContext, ThreadLocks, build_service_graph
from .protocol import Fail, NotAttempted, call_answer, exercise, expect_type, is_stub

# -- 14.1 ------------------------------------------------------------------------------

POOLERS = (None, "session", "transaction")


@exercise("14.1")
def check_pool_kwargs(pool_kwargs: object) -> str:
    for pooler in POOLERS:
        kwargs = call_answer(pool_kwargs, pooler, what="pool_kwargs(pooler)", case=f"pooler={pooler!r}")
        expect_type(kwargs, dict, f"the kwargs for pooler={pooler!r}")
        if kwargs.get("autocommit") is not True:
            raise Fail(f"pooler={pooler!r}: autocommit must be True: the saver commits each statement itself, "
                       "and setup() runs CREATE INDEX CONCURRENTLY, which a transaction refuses")
        if kwargs.get("row_factory") is not dict_row:
            raise Fail(f"pooler={pooler!r}: the saver reads columns by name: row_factory must be psycopg's dict_row")
        if "prepare_threshold" not in kwargs:
            raise Fail(f"pooler={pooler!r}: say prepare_threshold explicitly (psycopg's default is 5)")
        threshold = kwargs["prepare_threshold"]
        if pooler == "transaction" and threshold is not None:
            raise Fail("pooler='transaction': consecutive transactions may run on different server connections, "
                       "where a prepared statement does not exist: prepare_threshold=None turns preparing off")
        if pooler != "transaction" and threshold not in (0, None):
            raise Fail(f"pooler={pooler!r}: use 0 (what from_conn_string uses) or None, "
                       f"got prepare_threshold={threshold!r}")
        unknown = sorted(set(kwargs) - {"autocommit", "row_factory", "prepare_threshold"})
        if unknown:
            raise Fail(f"pooler={pooler!r}: {unknown[0]!r} is not one of the saver's connection settings")
    return "autocommit and dict_row always; prepare_threshold=None only behind a transaction-mode pooler"


# -- 14.2 ------------------------------------------------------------------------------

SAFETY_WAIT = 0.5  # seconds: only a wrong answer (one lock for all threads) ever waits this long


class _WatchedLocks(ThreadLocks):
    """ThreadLocks that count how often a lock was asked for, and say so on ``changed``."""

    def __init__(self, changed: asyncio.Event) -> None:
        super().__init__()
        self.asked = 0
        self.changed = changed

    @asynccontextmanager
    async def hold(self, thread_id: str) -> AsyncIterator[None]:
        self.asked += 1
        self.changed.set()
        async with super().hold(thread_id):
            yield


class _Overlap:
    """A ``hold`` that keeps a run in the model until a second run is inside too, or until the
    other call has asked ``locks`` for its thread's lock (then it would wait for this run).

    Events, not sleeps; :data:`SAFETY_WAIT` only ends a wait that nothing could end (a lock
    the check cannot see). ``peak`` is the most runs that were inside at once.
    """

    def __init__(self, locks: _WatchedLocks, *, lock_releases: bool = True) -> None:
        self.locks, self.changed, self.lock_releases = locks, locks.changed, lock_releases
        self.asked_before = locks.asked
        self.inside = 0
        self.peak = 0

    def _released(self) -> bool:
        """Once two runs were inside together (or the other asked for the lock), every run may go on."""
        return self.peak >= 2 or (self.lock_releases and self.locks.asked >= self.asked_before + 2)

    async def hold(self) -> None:
        self.inside += 1
        self.peak = max(self.peak, self.inside)
        self.changed.set()
        try:
            async with asyncio.timeout(SAFETY_WAIT):
                while not self._released():
                    self.changed.clear()
                    await self.changed.wait()
        except TimeoutError:
            pass
        finally:
            self.inside -= 1
            self.changed.set()


def _forks(saver: InMemorySaver, thread_id: str) -> int:
    parents = Counter(t.parent_config["configurable"]["checkpoint_id"]
                      for t in saver.list({"configurable": {"thread_id": thread_id}}) if t.parent_config)
    return sum(n > 1 for n in parents.values())


async def _turn(send: Any, locks: ThreadLocks, graph: Any, thread_id: str, text: str, context: Any) -> Any:
    result = send(locks, graph, thread_id, text, context)
    if inspect.isawaitable(result):
        result = await result
    return result


async def _scenario(send: Any) -> dict[str, Any]:
    saver = InMemorySaver()
    graph = build_service_graph(saver)
    locks = _WatchedLocks(asyncio.Event())
    first = await _turn(send, locks, graph, "one", "I'd like a window seat, please.", ServiceContext())
    if is_stub(first):
        return {"stub": True}
    same = _Overlap(locks)
    replies = await asyncio.gather(
        _turn(send, locks, graph, "one", "Actually, make it an aisle seat.", ServiceContext(hold=same.hold)),
        _turn(send, locks, graph, "one", "Where did I say I want to sit?", ServiceContext(hold=same.hold)))
    other = _Overlap(locks, lock_releases=False)  # two threads: only a second run inside releases
    await asyncio.gather(*(_turn(send, locks, graph, thread, "Hello.", ServiceContext(hold=other.hold))
                           for thread in ("two", "three")))
    state = await graph.aget_state({"configurable": {"thread_id": "one"}})
    return {"stub": False, "first": first, "replies": replies, "same_peak": same.peak, "other_peak": other.peak,
            "forks": _forks(saver, "one"), "messages": len(state.values["messages"]),
            "held": same.peak > 0 and other.peak > 0}


def _run(coro: Any) -> Any:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


@exercise("14.2")
def check_send(send: object) -> str:
    if is_stub(send):
        raise NotAttempted("replace the ... with your function")
    if not callable(send):
        raise Fail(f"expected a function send(locks, graph, thread_id, text, context), got {type(send).__name__}")
    try:
        outcome = _run(_scenario(send))
    except Fail:
        raise
    except Exception as exc:
        raise Fail(f"your function raised {type(exc).__name__}: {str(exc)[:120]}") from None
    if outcome["stub"]:
        raise NotAttempted("send still returns ...: write its body")
    if outcome["first"] != "Noted: a window seat.":
        raise Fail(f"the first turn returned {outcome['first']!r:.60}; return the reply's text "
                   "(result['messages'][-1].content)")
    if not outcome["held"]:
        raise Fail("the model never ran with your context: pass context=context to graph.ainvoke")
    if outcome["same_peak"] > 1 or outcome["forks"]:
        raise Fail(f"two turns on one thread overlapped ({outcome['forks']} fork in its history, "
                   f"{outcome['messages']} of 6 messages kept): hold locks.hold(thread_id) around the run")
    if outcome["other_peak"] < 2:
        raise Fail("turns on two different threads waited for each other: lock per thread "
                   "(locks.hold(thread_id)), not one lock for every thread")
    if outcome["replies"][1] != "You asked for an aisle seat.":
        raise Fail(f"the second turn answered {outcome['replies'][1]!r:.60}; it should see the first turn's aisle seat")
    return "one turn at a time per thread (no fork, 6 messages); other threads still run side by side"


# -- 14.3 ------------------------------------------------------------------------------

CONVERSATIONS = ["acme/support/2026-12/ana@example.com/" + "x" * 5000,
                 "acme/support/2026-12/ana@example.com/" + "x" * 4999 + "y",
                 "globex/sales/42", "globex/sales/43", "a", "ü/日本/" + "z" * 300]


@exercise("14.3")
def check_thread_id_for(thread_id_for: object) -> str:
    seen: dict[str, str] = {}
    for conversation in CONVERSATIONS:
        case = f"a conversation ID of {len(conversation)} characters ({conversation[:20]!r}...)"
        got = call_answer(thread_id_for, conversation, what="thread_id_for(conversation_id)", case=case)
        expect_type(got, str, "a thread_id")
        if call_answer(thread_id_for, conversation, what="thread_id_for(conversation_id)", case=case) != got:
            raise Fail(f"for {case} two calls gave different thread_ids: the same conversation must get the same one")
        if len(got) > 64 or not got.isascii():
            raise Fail(f"for {case} the thread_id has {len(got)} characters"
                       f"{'' if got.isascii() else ' (not all ASCII)'}: at most 64 ASCII characters")
        if len(conversation) >= 8 and conversation[:8] in got or "@" in got:
            raise Fail(f"for {case} the thread_id still contains the conversation's text: make it opaque (a hash)")
        if got in seen:
            raise Fail(f"{conversation[:20]!r}... and {seen[got][:20]!r}... got the same thread_id: "
                       "use the whole ID (a hash of all of it), not a prefix")
        seen[got] = conversation
    if not all(re.fullmatch(r"[\x21-\x7e]+", t) for t in seen):
        raise Fail("a thread_id travels in URLs and logs: no spaces or control characters")
    return "a hash of the whole ID: stable, distinct, short and opaque"
