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
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from psycopg.rows import dict_row

from ..persistent_service import ServiceContext, build_service_graph
from .protocol import Fail, NotAttempted, call_answer, exercise, expect_type, is_stub

# -- 14.1 ------------------------------------------------------------------------------

#: What sits between the service and PostgreSQL (the exercise names each one).
POOLERS = (None, "session", "transaction", "transaction-tracking")


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
        if pooler != "transaction" and (threshold is None or isinstance(threshold, bool)
                                        or not isinstance(threshold, int) or threshold < 0):
            why = ("PgBouncer 1.22+ with max_prepared_statements above 0 tracks prepared statements, and psycopg "
                   "on libpq 17+ closes them at protocol level" if pooler == "transaction-tracking"
                   else "every transaction of a client stays on its server connection")
            raise Fail(f"pooler={pooler!r}: prepared statements work here ({why}): keep them, with 0 as "
                       f"from_conn_string does; got prepare_threshold={threshold!r}")
        unknown = sorted(set(kwargs) - {"autocommit", "row_factory", "prepare_threshold"})
        if unknown:
            raise Fail(f"pooler={pooler!r}: {unknown[0]!r} is not one of the saver's connection settings")
    return ("autocommit and dict_row always; prepare_threshold=None only behind a transaction-mode pooler "
            "that does not track prepared statements")


# -- 14.2 ------------------------------------------------------------------------------

SAFETY_WAIT = 0.5  # seconds: only a wrong answer (a turn that waits, or one flag for all threads) waits this long


class _Model:
    """The stand-in model's ``hold`` for the check: counts the runs inside at once (``peak``).

    A run stays inside until ``release()`` says it may go on: once another call on the
    thread has *returned* (a correct answer refuses it at once), or once two runs are inside
    together. Events, not sleeps; :data:`SAFETY_WAIT` only ends a wait nothing could end
    (an answer that makes the second call wait for the first).
    """

    def __init__(self, *, fail: bool = False) -> None:
        self.changed = asyncio.Event()
        self.inside = self.peak = self.returned = 0
        self.fail = fail

    def call_returned(self) -> None:
        self.returned += 1
        self.changed.set()

    async def hold(self) -> None:
        self.inside += 1
        self.peak = max(self.peak, self.inside)
        self.changed.set()
        try:
            if self.fail:
                raise RuntimeError("the model is down")
            async with asyncio.timeout(SAFETY_WAIT):
                while not (self.returned or self.peak >= 2):
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


async def _turn(send: Any, busy: set[str], graph: Any, thread_id: str, text: str, model: _Model | None = None) -> Any:
    try:
        result = send(busy, graph, thread_id, text, ServiceContext(hold=model.hold if model else None))
        if inspect.isawaitable(result):
            result = await result
        return result
    finally:
        if model is not None:
            model.call_returned()


async def _scenario(send: Any) -> dict[str, Any]:
    saver = InMemorySaver()
    graph = build_service_graph(saver)
    busy: set[str] = set()
    first = await _turn(send, busy, graph, "one", "I'd like a window seat, please.")
    if is_stub(first):
        return {"stub": True}
    double = _Model()  # a double-click: the same message twice, at once
    clicks = await asyncio.gather(*(_turn(send, busy, graph, "one", "Actually, make it an aisle seat.", double)
                                    for _ in range(2)))
    after = await _turn(send, busy, graph, "one", "Where did I say I want to sit?")
    state = await graph.aget_state({"configurable": {"thread_id": "one"}})
    failing = _Model(fail=True)
    try:
        failed = await _turn(send, busy, graph, "two", "Hello.", failing)
    except RuntimeError:
        failed = "raised"
    after_failure = await _turn(send, busy, graph, "two", "Hello again.")
    others = _Model()  # two threads at once: only a second run inside releases them
    others.call_returned = lambda: None  # a refused call on another thread must not release the other
    side_by_side = await asyncio.gather(*(_turn(send, busy, graph, thread, "Hello.", others)
                                          for thread in ("three", "four")))
    return {"stub": False, "first": first, "clicks": clicks, "double_peak": double.peak, "after": after,
            "forks": _forks(saver, "one"), "messages": len(state.values["messages"]), "held": double.peak > 0,
            "failed": failed, "failing_ran": failing.peak > 0, "after_failure": after_failure,
            "side_by_side": side_by_side, "others_peak": others.peak, "busy_left": sorted(busy)}


def _run(coro: Any) -> Any:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


@exercise("14.2")
def check_send(send: object) -> str:
    if is_stub(send):
        raise NotAttempted("replace the ... with your function")
    if not callable(send):
        raise Fail(f"expected a function send(busy, graph, thread_id, text, context), got {type(send).__name__}")
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
    if outcome["clicks"] == [None, None]:
        raise Fail("both calls of the double-click returned None, after the thread's first turn had ended: the "
                   "thread must stop being busy when its turn ends (busy.discard)")
    if not outcome["held"]:
        raise Fail("the model never ran with your context: pass context=context to graph.ainvoke")
    if outcome["double_peak"] > 1 or outcome["forks"]:
        raise Fail(f"two turns on one thread ran at once ({outcome['forks']} fork in its history): mark the "
                   "thread busy (busy.add) before the first await, right after you checked it")
    if None not in outcome["clicks"]:
        raise Fail(f"the double-click got {outcome['clicks']!r:.80}: the second call must return None at once "
                   "while the first turn runs (refuse it, do not wait for the lock: that would be enqueue)")
    if outcome["after"] is None:
        raise Fail("a turn after the double-click was refused: the thread must stop being busy when its turn "
                   "ends (busy.discard)")
    if outcome["after"] != "You asked for an aisle seat." or outcome["messages"] != 6:
        raise Fail(f"after the double-click the thread answered {outcome['after']!r:.60} with "
                   f"{outcome['messages']} messages; expected the aisle seat, and 6 messages (one turn refused)")
    if outcome["after_failure"] is None:
        raise Fail("after a turn that raised, its thread stayed busy forever: remove it in a finally block")
    if outcome["others_peak"] < 2 or None in outcome["side_by_side"]:
        raise Fail("turns on two different threads were refused or waited for each other: mark the thread "
                   "busy, not the whole service")
    if outcome["busy_left"]:
        raise Fail(f"threads left marked busy after every turn ended: {outcome['busy_left']}")
    return ("a busy thread refuses a second turn at once, and is free again when its turn ends, also when it "
            "fails; other threads run side by side")


# -- 14.3 ------------------------------------------------------------------------------

CONVERSATIONS = ["acme/support/2026-12/ana@example.com/" + "x" * 5000,
                 "acme/support/2026-12/ana@example.com/" + "x" * 4999 + "y",
                 "globex/sales/42", "globex/sales/43", "initech/a", "initech/ü/日本/" + "z" * 300]


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
    for got, conversation in seen.items():
        tenant = conversation.split("/", 1)[0]
        if not got.startswith(f"{tenant}:"):
            raise Fail(f"the thread_id {got[:24]!r}... of a conversation of tenant {tenant!r} does not start with "
                       f"{tenant + ':'!r}: your operators find a tenant's threads by that prefix (the part of "
                       "the conversation ID before the first '/', then ':', then the hash)")
    return "the tenant, then a hash of the whole ID: stable, distinct, short and opaque"
