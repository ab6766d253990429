"""Checks for chapter 12 (production backends). None of them needs a database server:
PostgresSaver and InMemorySaver share the saver interface and the runtime's semantics."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from ..serializer_safety import Cabin, FareQuote, watch_serde
from ..state_growth import build_trimming_chat_graph
from ..travel_graphs import build_chat_graph, say
from .protocol import Fail, call_answer, exercise, expect_keys, expect_type

# -- 12.1 ------------------------------------------------------------------------------

# (thread, [(text, metadata for that turn)]), oldest turn first.
RETENTION_THREADS = [
    ("t-old", [("Window seat, please.", {"status": "finished", "finished_day": 10})]),
    ("t-recent", [("Aisle seat, please.", {"status": "finished", "finished_day": 85})]),
    ("t-open", [("Any meals?", {})]),
    ("t-reopened", [("Middle seat, please.", {"status": "finished", "finished_day": 5}),
                    ("I'm back: can I change my seat?", {})]),
    ("t-refinished", [("Window seat.", {"status": "finished", "finished_day": 20}),
                      ("One more question?", {}),
                      ("Thanks, done.", {"status": "finished", "finished_day": 90})]),
    ("t-edge", [("Aisle, please.", {"status": "finished", "finished_day": 70})]),
]
RETENTION_CASES = [  # (today, keep_days) -> expected
    ((100, 30), ["t-edge", "t-old"]),
    ((200, 30), ["t-edge", "t-old", "t-recent", "t-refinished"]),
    ((100, 95), []),
]


def _retention_saver() -> InMemorySaver:
    saver = InMemorySaver()
    graph = build_chat_graph(saver)
    for thread_id, turns in RETENTION_THREADS:
        for text, meta in turns:
            say(graph, thread_id, text, **meta)
    return saver


def _thread_count(saver: InMemorySaver) -> int:
    return len({c.config["configurable"]["thread_id"] for c in saver.list(None)})


@exercise("12.1")
def check_threads_to_delete(threads_to_delete: object) -> str:
    for (today, keep_days), expected in RETENTION_CASES:
        saver = _retention_saver()
        before = _thread_count(saver)
        got = call_answer(threads_to_delete, saver, today, keep_days, what="threads_to_delete(saver, today, keep_days)")
        if _thread_count(saver) != before:
            raise Fail("your function deleted threads itself: only return their ids, and let the caller delete "
                       "(a retention job should be able to print what it would delete first)")
        if isinstance(got, (str, bytes)) or not isinstance(got, (list, tuple, set, frozenset)):
            raise Fail(f"return a list of thread ids, got {type(got).__name__} {got!r:.50}")
        got = sorted(map(str, got))
        if got == expected:
            continue
        extra, missing = sorted(set(got) - set(expected)), sorted(set(expected) - set(got))
        if "t-open" in extra:
            raise Fail("t-open never finished: only threads whose metadata has status == 'finished' may go")
        if "t-reopened" in extra:
            raise Fail("t-reopened was finished on day 5 but its customer came back later: read the thread's latest "
                       "checkpoint with saver.get_tuple({'configurable': {'thread_id': ...}}) and keep it unless "
                       "that one says finished")
        if "t-edge" in missing:
            raise Fail(f"with today={today} and keep_days={keep_days}, t-edge finished exactly keep_days ago and must "
                       "go: use today - finished_day >= keep_days")
        if "t-recent" in extra:
            raise Fail(f"with today={today} and keep_days={keep_days} you would delete {extra}, which finished less "
                       "than keep_days ago")
        if "t-refinished" in missing or "t-refinished" in extra:
            raise Fail("t-refinished finished twice (day 20, and again on day 90): use the finished_day of its latest "
                       "checkpoint, not of an older one")
        if extra:
            raise Fail(f"with today={today} and keep_days={keep_days} you would delete {extra}, which should stay")
        raise Fail(f"with today={today} and keep_days={keep_days} these expired threads are missing: {missing}; "
                   "collect candidates from saver.list(None, filter={'status': 'finished'})")
    return "expired threads found, reopened and recent ones kept, nothing deleted behind the caller's back"


# -- 12.2 ------------------------------------------------------------------------------

SAMPLE_STATE = {"quote": FareQuote("PEK-SFO", 540, Cabin.BUSINESS), "departure": dt.datetime(2026, 5, 1, 9, 30),
                "price": decimal.Decimal("540.00"), "booking_id": uuid.UUID("3f1c1a52-5d55-4f49-9d0e-6c1d2b7a9e41")}
SAMPLE_TYPES = {(t.__module__, t.__name__) for t in (FareQuote, Cabin, dt.datetime, decimal.Decimal, uuid.UUID)}


def _blocked_without_allowlist() -> set[tuple[str, ...]]:
    """The sample's types that langgraph's built-in safe list alone refuses (asked of langgraph, not hard-coded)."""
    with watch_serde() as watch:
        strict = JsonPlusSerializer(allowed_msgpack_modules=None)
        strict.loads_typed(strict.dumps_typed(SAMPLE_STATE))
    return {tuple(name.rsplit(".", 1)) for name in watch.types("msgpack_blocked")}


def _entry_key(entry: object) -> tuple[str, ...]:
    if isinstance(entry, type):
        return (entry.__module__, entry.__name__)
    if isinstance(entry, tuple) and all(isinstance(part, str) for part in entry):
        return entry
    if isinstance(entry, str):
        raise Fail(f"the entry {entry!r} is a plain string: write a class, or a tuple like "
                   "('helpers.serializer_safety', 'FareQuote'); a whole module cannot be allowed")
    raise Fail(f"each entry must be a class or a ('module', 'Name') tuple, got {type(entry).__name__} {entry!r:.40}")


@exercise("12.2")
def check_allowed_modules(allowed: object) -> str:
    if allowed is True:
        raise Fail("True allows every type (with a warning): that is the permissive default you are replacing; "
                   "list the types instead")
    if allowed is None:
        raise Fail("None means strict: only the built-in safe list; your own types would be blocked")
    expect_type(allowed, (list, tuple, set, frozenset), "a list of classes or ('module', 'Name') tuples")
    keys = {_entry_key(entry) for entry in allowed}
    needed = _blocked_without_allowlist()
    safe = sorted(".".join(k) for k in (keys & SAMPLE_TYPES) - needed)
    if safe:
        raise Fail(f"{', '.join(safe)} is already on langgraph's built-in safe list: leave it out (smallest list)")
    with watch_serde() as watch:
        serde = JsonPlusSerializer(allowed_msgpack_modules=list(allowed))
        loaded = serde.loads_typed(serde.dumps_typed(SAMPLE_STATE))
    blocked = watch.types("msgpack_blocked")
    if blocked:
        inside = any("Cabin" in b for b in blocked)
        nested = " (it sits inside FareQuote: nested types must be listed too)" if inside else ""
        raise Fail(f"still blocked: {', '.join(blocked)}{nested}")
    if loaded != SAMPLE_STATE:
        raise Fail("the state did not load back as itself; list exactly the classes it holds")
    extra = sorted(".".join(k) for k in keys - needed)
    if extra:
        raise Fail(f"{', '.join(extra)} is not in this state: an allowlist should name only what you store")
    return "FareQuote and Cabin allowed; datetime, Decimal and UUID were already safe; nothing else may be rebuilt"


# -- 12.3 ------------------------------------------------------------------------------

PREDICTION_KEYS = ("checkpoints after 5 turns", "messages after 5 turns", "checkpoints at the end",
                   "messages at the end")
# Why each number is what it is, in the order a wrong prediction is reported (the trimming first).
TRIMMING_HINTS = {
    "messages after 5 turns":
        "keep=4: the node keeps the newest 3 and adds its reply, so the state never holds more than 4",
    "checkpoints after 5 turns":
        "Trimming changes what the state holds, not how many checkpoints a turn writes: input, reply step, end "
        "(3 per turn)",
    "checkpoints at the end": "delete_thread removed the whole history; only the one new turn is left",
    "messages at the end": "After delete_thread the thread starts empty: one question and one reply",
}


def _trimming_truth() -> dict[str, int]:
    saver = InMemorySaver()
    graph = build_trimming_chat_graph(saver, keep=4)
    config = {"configurable": {"thread_id": "check-11-3"}}

    def measure() -> tuple[int, int]:
        return len(list(graph.get_state_history(config))), len(graph.get_state(config).values["messages"])

    for n in range(5):
        say(graph, "check-11-3", f"Message {n + 1}: window seat, please.")
    after_5 = measure()
    saver.delete_thread("check-11-3")
    say(graph, "check-11-3", "Hello again.")
    at_end = measure()
    return dict(zip(PREDICTION_KEYS, (*after_5, *at_end), strict=True))


@exercise("12.3")
def check_trimming_prediction(prediction: object) -> str:
    expect_type(prediction, dict, "the four predicted numbers")
    expect_keys(prediction, PREDICTION_KEYS)
    for key in PREDICTION_KEYS:
        expect_type(prediction[key], int, key)
    truth = _trimming_truth()
    for key, why in TRIMMING_HINTS.items():
        if prediction[key] != truth[key]:
            raise Fail(f"{key} = {prediction[key]}? {why}")
    return "15 checkpoints and 4 messages, then 3 and 2: trimming bounds the state, deleting bounds the history"
