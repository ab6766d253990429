"""Checks for chapter 15 (keeping threads small). All run in memory: no database file, no server."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel
from langgraph.store.memory import InMemoryStore

from ..thread_growth import message_copies
from ..travel_graphs import build_chat_graph, say
from .protocol import Fail, call_answer, exercise, expect_type

# -- 15.1 ------------------------------------------------------------------------------

# (turns, nodes, durability): chains of 2 and 3 nodes, which no cell of the chapter runs.
COPY_CASES = [(3, 2, "async"), (4, 3, "exit"), (5, 2, "sync"), (2, 3, "async"), (6, 2, "exit"), (1, 3, "sync"),
              (3, 1, "exit")]


def build_chain_graph(checkpointer: InMemorySaver, nodes: int) -> CompiledStateGraph:
    """START -> step-1 -> ... -> step-<nodes> -> END on MessagesState; each node adds one AI message."""
    def make_step(n: int) -> Callable[[MessagesState], dict[str, list[AIMessage]]]:
        def step(state: MessagesState) -> dict[str, list[AIMessage]]:
            return {"messages": [AIMessage(f"step {n} of {nodes} done")]}
        return step

    builder = StateGraph(MessagesState)
    previous = START
    for n in range(1, nodes + 1):
        builder.add_node(f"step-{n}", make_step(n))
        builder.add_edge(previous, f"step-{n}")
        previous = f"step-{n}"
    builder.add_edge(previous, END)
    return builder.compile(checkpointer=checkpointer)


def measured_copies(turns: int, nodes: int, durability: str) -> int:
    """Run ``turns`` turns of a ``nodes``-node chain on a new InMemorySaver and count the stored messages."""
    saver = InMemorySaver()
    graph = build_chain_graph(saver, nodes)
    for n in range(turns):
        graph.invoke({"messages": [HumanMessage(f"Turn {n + 1}: window seat, please.")]},
                     {"configurable": {"thread_id": "t"}}, durability=durability)
    return message_copies(saver, "t")


class _RanAGraph(BaseException):
    """Raised when the answer runs a graph (a BaseException, so that call_answer does not wrap it)."""


@contextmanager
def _no_graph_runs() -> Iterator[None]:
    """While the answer runs, running any graph raises _RanAGraph: 15.1 asks for a count, not a measurement."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise _RanAGraph

    saved = {name: getattr(Pregel, name) for name in ("invoke", "stream", "ainvoke", "astream")}
    for name in saved:
        setattr(Pregel, name, refuse)
    try:
        yield
    finally:
        for name, method in saved.items():
            setattr(Pregel, name, method)


@exercise("15.1")
def check_copies_stored(copies_stored: object) -> str:
    for turns, nodes, durability in COPY_CASES:
        call = f"copies_stored({turns}, {nodes}, {durability!r})"
        try:
            with _no_graph_runs():
                got = call_answer(copies_stored, turns, nodes, durability,
                                  what="copies_stored(turns, nodes, durability)",
                                  case=f"turns={turns}, nodes={nodes}, durability={durability!r}")
        except _RanAGraph:
            raise Fail(f"{call} ran a graph: measuring is what the check does; reason the count out from how the "
                       "chapter counted the one-node assistant (the checkpoints of a turn, the messages in "
                       "each), with no graph run") from None
        expect_type(got, int, call)
        expected = measured_copies(turns, nodes, durability)
        if got == expected:
            continue
        if durability == "exit":
            raise Fail(f"{call} returned {got}; a real run stores {expected}: with durability='exit' each turn "
                       "saves one checkpoint, holding the whole list at the end of that turn")
        raise Fail(f"{call} returned {got}; a real run stores {expected}: with durability={durability!r} each turn "
                   "saves one checkpoint per super-step (the input one, before the human message is applied, one "
                   "after it, then one after each node); count the messages in each")
    return ("over N turns of an n-node chain, 'async' and 'sync' store (n+1)(n+2)N²/2 messages, "
            "'exit' (n+1)N(N+1)/2: quadratic in N either way")


# -- 15.2 ------------------------------------------------------------------------------

SEAT_START = {"ana": "12A", "bo": "12B"}
SEAT_WRITES = [{"cy": "14C"}, {"ana": "3A"}, {"bo": None}, {"cy": "15C", "dan": "1A"}, {"ghost": None},
               {"ana": None}, {"ana": "30F"}]
SEAT_RESULT = {"ana": "30F", "cy": "15C", "dan": "1A"}


def _apply(reducer: object, seats: dict[str, str], writes: list[dict[str, str | None]], case: str) -> object:
    before = {k: v for k, v in seats.items()}
    got = call_answer(reducer, seats, [dict(w) for w in writes], what="apply_seat_changes(seats, writes)", case=case)
    if seats != before:
        raise Fail("your reducer changed the dict it was given: a DeltaChannel may hand it a value another "
                   "checkpoint still shares; build and return a new dict")
    if not isinstance(got, dict):
        raise Fail(f"return the new dict of seats, got {type(got).__name__} {got!r:.50}")
    return got


@exercise("15.2")
def check_apply_seat_changes(apply_seat_changes: object) -> str:
    whole = _apply(apply_seat_changes, dict(SEAT_START), SEAT_WRITES, "all seven writes in one batch")
    if whole != SEAT_RESULT:
        if any(v is None for v in whole.values()):
            raise Fail(f"got {whole}: a change to None removes the passenger, it does not store None")
        if whole == {"ana": "30F", "bo": "12B"}:
            raise Fail(f"got {whole}: only the last write of the batch was applied; a DeltaChannel replays many "
                       "writes in one call: apply every write of the batch, in order")
        if whole.get("ana") != "30F":
            raise Fail(f"got {whole}: Ana was removed, then given 30F: apply the writes in order, a later one wins")
        raise Fail(f"after {SEAT_WRITES} on {SEAT_START} the seats are {SEAT_RESULT}, you returned {whole}")
    empty = _apply(apply_seat_changes, {}, [], "no writes at all")
    if empty != {}:
        raise Fail(f"with no writes the value stays as it was ({{}}), you returned {empty}")
    for cut in range(len(SEAT_WRITES) + 1):
        for cut2 in range(cut, len(SEAT_WRITES) + 1):
            parts = [SEAT_WRITES[:cut], SEAT_WRITES[cut:cut2], SEAT_WRITES[cut2:]]
            value = dict(SEAT_START)
            for part in parts:
                value = _apply(apply_seat_changes, value, part, f"writes in batches of {[len(p) for p in parts]}")
            if value != SEAT_RESULT:
                raise Fail(f"in batches of {[len(p) for p in parts]} writes your reducer gives {value}, in one batch "
                           f"{SEAT_RESULT}: it is not batching-invariant (use every write of a batch, in order)")
    for one in itertools.permutations(["ana", "bo"]):
        value = _apply(apply_seat_changes, {}, [{p: "1A"} for p in one], "two passengers given 1A")
        if value != {"ana": "1A", "bo": "1A"}:
            raise Fail(f"two passengers may share a value in the dict; got {value}")
    return "the same seats for every split of the writes, and the old dict untouched"


# -- 15.3 ------------------------------------------------------------------------------

ERASE_THREADS = [("ana-1", "ana"), ("ana-2", "ana"), ("bo-1", "bo"), ("anabel-1", "anabel"), ("guest-1", None)]
ANA_FACTS = 12                       # more than store.search's default limit of 10
OTHER_ITEMS = [(("memories", "bo"), "fact-1"), (("memories", "anabel"), "fact-1"), (("fare-rules",), "PEK-SFO")]


def _world() -> tuple[InMemorySaver, InMemoryStore]:
    saver, store = InMemorySaver(), InMemoryStore()
    graph = build_chat_graph(saver)
    for thread_id, user in ERASE_THREADS:
        say(graph, thread_id, "Window seat, please.", **({"user_id": user} if user else {}))
    for n in range(ANA_FACTS):
        store.put(("memories", "ana"), f"fact-{n + 1}", {"fact": f"fact {n + 1}"})
    store.put(("memories", "ana", "trips"), "trip-1", {"fact": "PEK-SFO in May"})
    for namespace, key in OTHER_ITEMS:
        store.put(namespace, key, {"fact": "keep me"})
    return saver, store


def _threads(saver: InMemorySaver) -> set[str]:
    return {c.config["configurable"]["thread_id"] for c in saver.list(None)}


@exercise("15.3")
def check_erase_user(erase_user: object) -> str:
    saver, store = _world()
    call_answer(erase_user, saver, store, "ana", what="erase_user(saver, store, user_id)",
                case="user_id='ana'")
    threads = _threads(saver)
    left_threads = sorted(threads & {"ana-1", "ana-2"})
    if left_threads:
        raise Fail(f"Ana's threads {left_threads} are still there: find them with "
                   "saver.list(None, filter={'user_id': user_id}) and delete_thread each one")
    if threads != {"bo-1", "anabel-1", "guest-1"}:
        raise Fail(f"other users' threads must stay; left: {sorted(threads)}")
    left = store.search(("memories", "ana"), limit=1000)
    if left:
        nested = [i for i in left if i.namespace != ("memories", "ana")]
        if len(left) == len(nested):
            raise Fail("the items in ('memories', 'ana', 'trips') are still there: the user's namespace includes "
                       "the namespaces below it (store.search(('memories', user_id)) returns them too)")
        raise Fail(f"{len(left)} of Ana's {ANA_FACTS + 1} memories are still there: store.search returns at most "
                   "limit items (10 by default): search again until nothing is left, or pass a larger limit")
    for namespace, key in OTHER_ITEMS:
        if store.get(namespace, key) is None:
            raise Fail(f"{namespace}/{key} belongs to someone else (or to no user) and was deleted")
    return "Ana is gone from both the checkpointer and the store; everyone else is untouched"
