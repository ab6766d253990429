"""Read LangGraph checkpoint IDs (uuid6) field by field, without printing them.

A checkpoint ID is a version-6 UUID made by ``langgraph.checkpoint.base.id.uuid6(clock_seq=step)``.
Its 128 bits, most significant first:

======================  =====  ====================================================
field                   bits   holds
======================  =====  ====================================================
time_high               32     bits 59..28 of the 60-bit timestamp
time_mid                16     bits 27..12 of the timestamp
version                 4      6
time_low                12     bits 11..0 of the timestamp
variant                 2      0b10 (RFC 4122/9562)
clock_seq               14     LangGraph puts the super-step here (``step & 0x3FFF``)
node                    48     random
======================  =====  ====================================================

The timestamp counts 100-ns intervals since 1582-10-15 (the Gregorian epoch of UUIDs).
Because the most significant time bits come first and hex digits sort like numbers, the
string order of v6 IDs is their time order.

Python 3.11's ``uuid.UUID.time`` decodes every UUID with the version-1 layout (time_low
first), so on a v6 ID it returns the fields in the wrong order: :func:`stdlib_time` shows
that value, :func:`timestamp_100ns` the right one. Notebooks print only properties of IDs
(versions, decoded steps, deltas, orderings), never the IDs themselves.

Two functions are lessons of chapter 04 and shown there first (``# saved as``):
:func:`walk_parent_chain` (the parent links, read with ``saver.get_tuple``) and
:func:`copy_with_new_ids` (what a migration script that mints its own ids does, with
``saver.put``).
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from helpers import processes

if TYPE_CHECKING:  # annotations only: a child process that profiles IDs need not import LangGraph
    from langgraph.checkpoint.base import BaseCheckpointSaver

#: 100-ns intervals between the UUID epoch 1582-10-15 and the Unix epoch 1970-01-01.
GREGORIAN_TO_UNIX_100NS = 0x01B21DD213814000
UUID_EPOCH = datetime(1582, 10, 15, tzinfo=UTC)

#: The bit layout, most significant bit first: (field, first bit, width, what it holds).
UUID6_LAYOUT = (
    ("time_high", 0, 32, "timestamp bits 59..28"),
    ("time_mid", 32, 16, "timestamp bits 27..12"),
    ("version", 48, 4, "the number 6"),
    ("time_low", 52, 12, "timestamp bits 11..0"),
    ("variant", 64, 2, "binary 10"),
    ("clock_seq", 66, 14, "LangGraph: the super-step"),
    ("node", 80, 48, "random bits"),
)


def as_uuid(value: Any) -> uuid.UUID:
    """Accept a UUID or its string form."""
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def fields(value: Any) -> dict[str, int]:
    """The seven fields of :data:`UUID6_LAYOUT` as integers."""
    n = as_uuid(value).int
    return {name: (n >> (128 - start - width)) & ((1 << width) - 1) for name, start, width, _ in UUID6_LAYOUT}


def layout_rows(value: Any) -> list[dict[str, Any]]:
    """One row per field: name, bit range, width, hex value, what it holds."""
    values = fields(value)
    return [{"field": name, "bits": f"{start}-{start + width - 1}", "width": width,
             "hex": f"{values[name]:0{(width + 3) // 4}x}", "holds": holds}
            for name, start, width, holds in UUID6_LAYOUT]


def timestamp_100ns(value: Any) -> int:
    """The v6 timestamp: 100-ns intervals since 1582-10-15 (time_high, time_mid, time_low)."""
    f = fields(value)
    return (f["time_high"] << 28) | (f["time_mid"] << 12) | f["time_low"]


def stdlib_time(value: Any) -> int:
    """What Python 3.11's ``uuid.UUID(value).time`` returns: the v1 reading, wrong for v6.

    (LangGraph's ``uuid6()`` returns a subclass whose ``.time`` is right, but checkpoint IDs
    reach applications as strings, and ``uuid.UUID(string)`` is the plain class.)
    """
    return uuid.UUID(str(value)).time


def to_datetime(count_100ns: int) -> datetime:
    """A 60-bit UUID timestamp as an aware UTC datetime."""
    return UUID_EPOCH + timedelta(microseconds=count_100ns // 10)


def decoded_datetime(value: Any) -> datetime:
    """When the ID was minted, decoded with the v6 layout."""
    return to_datetime(timestamp_100ns(value))


def unix_seconds(value: Any) -> float:
    return (timestamp_100ns(value) - GREGORIAN_TO_UNIX_100NS) / 1e7


def step_of(value: Any) -> int:
    """The super-step LangGraph wrote into clock_seq: 0x3FFF is -1, any other value the step itself.

    -1 (the input checkpoint of a thread's first run) is the only negative step, so reading
    the 14 bits as a signed number would misread real steps from 8192 up. The field wraps:
    step 16383 reads as -1, step 16389 as 5.
    """
    seq = fields(value)["clock_seq"]
    return -1 if seq == 0x3FFF else seq


def fourth_group(value: Any) -> str:
    """The 4th dash-separated group: variant bits plus clock_seq, e.g. ``8003``."""
    return str(as_uuid(value)).split("-")[3]


def expected_fourth_group(step: int) -> str:
    """``8000 + step`` in hex for step >= 0, ``bfff`` for -1 (only 14 bits survive)."""
    return f"{0x8000 | (step & 0x3FFF):04x}"


def make_uuid6(when: datetime, clock_seq: int, node: int = 0) -> uuid.UUID:
    """A v6 UUID built from fixed inputs: a reproducible specimen for teaching."""
    count = (when - UUID_EPOCH) // timedelta(microseconds=1) * 10
    n = ((count >> 12) << 80) | (6 << 76) | ((count & 0x0FFF) << 64)
    n |= (0b10 << 62) | ((clock_seq & 0x3FFF) << 48) | (node & 0xFFFFFFFFFFFF)
    return uuid.UUID(int=n)


def seeded_uuid4(seed: int) -> uuid.UUID:
    """A version-4 UUID from a seeded generator: random-looking but reproducible."""
    return uuid.UUID(int=random.Random(seed).getrandbits(128), version=4)


def seeded_uuid4_minter(seed: int = 1) -> Callable[[], uuid.UUID]:
    """A function returning :func:`seeded_uuid4` of seed, seed+1, ...: a reproducible uuid4 stream."""
    seeds = iter(range(seed, seed + 1_000_000))
    return lambda: seeded_uuid4(next(seeds))


def bucket_seconds(seconds: float, limits: Sequence[float] = (1.0,)) -> str:
    """A stable label for a duration: 'negative', '< 10 ms', '< 1 s', '>= 1 s', ...

    ``limits`` are the bucket edges in seconds, ascending; the default has one edge, 1 s.
    """
    if seconds < 0:
        return "negative"
    for limit in limits:
        if seconds < limit:
            return f"< {limit * 1000:g} ms" if limit < 1 else f"< {limit:g} s"
    return f">= {limits[-1]:g} s" if limits[-1] >= 1 else f">= {limits[-1] * 1000:g} ms"


def strictly_increasing(items: Sequence[Any]) -> bool:
    return all(a < b for a, b in zip(items, items[1:], strict=False))


def generator_profile(name: str, make: Callable[[], Any], n: int = 1000,
                      decode: Callable[[uuid.UUID], float] | None = None) -> dict[str, Any]:
    """Mint ``n`` IDs in a tight loop and report properties, never the IDs.

    ``decode`` turns one UUID into Unix seconds when the format embeds a time.
    """
    import time

    start = time.time()
    ids = [as_uuid(make()) for _ in range(n)]
    end = time.time()
    texts = [str(u) for u in ids]
    row = {"generator": name, "version": sorted({u.version for u in ids}),
           "variant_bits": sorted({f"{(u.int >> 62) & 0b11:02b}" for u in ids}),
           "distinct": len(set(texts)) == n, "string_order_is_creation_order": strictly_increasing(texts),
           "embeds_time": decode is not None}
    if decode is not None:
        times = [decode(u) for u in ids]
        row["first_id_vs_clock"] = bucket_seconds(abs(times[0] - start))
        row["last_id_ahead_of_clock"] = bucket_seconds(max(0.0, times[-1] - end), (0.01, 1.0))
    else:
        row["first_id_vs_clock"] = row["last_id_ahead_of_clock"] = "-"
    return row


def uuid7_unix_seconds(value: uuid.UUID) -> float:
    """uuid7: the top 48 bits are milliseconds since 1970."""
    return (as_uuid(value).int >> 80) / 1000


def uuid7_profile_in_fresh_process(name: str, n: int = 1000) -> dict[str, Any]:
    """:func:`generator_profile` of the pinned ``uuid6`` package's ``uuid7``, run in a new interpreter.

    That ``uuid7`` keeps its last timestamp in a module variable and, within one millisecond,
    adds 1 ms per ID: after ``n`` IDs in a loop it is up to ``n`` ms ahead of the clock, and a
    second profile in the same process would start ahead. A fresh process starts from the
    clock, so a cell that shows this row gives the same row every time it runs.
    """
    code = f"""
import json
import uuid6
from helpers import checkpoint_ids
print(json.dumps(checkpoint_ids.generator_profile({name!r}, uuid6.uuid7, n={int(n)},
                                                  decode=checkpoint_ids.uuid7_unix_seconds)))
"""
    return json.loads(processes.run_python(code).stdout)


# shown in solutions/04_checkpoint_ids.ipynb
def walk_parent_chain(saver: BaseCheckpointSaver, config: dict) -> list[dict]:
    """Follow ``parent_config`` links from the checkpoint ``config`` selects back to the first.

    One row per checkpoint: its id, step and source, its parent's id (None for the first),
    whether the saver stores that parent, and whether the parent's id sorts before the
    child's. The walk stops at a parent the saver does not store.
    """
    rows, current = [], saver.get_tuple(config)
    while current is not None:
        child_id = current.config["configurable"]["checkpoint_id"]
        parent_config = current.parent_config          # None for the thread's first checkpoint
        parent = saver.get_tuple(parent_config) if parent_config else None
        parent_id = parent_config["configurable"]["checkpoint_id"] if parent_config else None
        rows.append({"id": child_id, "step": current.metadata.get("step"), "source": current.metadata.get("source"),
                     "parent_id": parent_id, "parent_stored": None if parent_id is None else parent is not None,
                     "parent_sorts_first": None if parent_id is None else parent_id < child_id})
        current = parent
    return rows


def labelled(rows: Iterable[dict[str, Any]], labels: dict[str, str], missing: str = "?") -> list[dict[str, Any]]:
    """Replace the ``id``/``parent_id`` columns with labels (unknown ids become ``missing``)."""
    out = []
    for row in rows:
        row = dict(row)
        row["id"] = labels.get(row["id"], missing)
        row["parent_id"] = None if row["parent_id"] is None else labels.get(row["parent_id"], missing)
        out.append(row)
    return out


# shown in solutions/04_checkpoint_ids.ipynb
def copy_with_new_ids(source: BaseCheckpointSaver, target: BaseCheckpointSaver, thread_id: str,
                      new_thread_id: str, mint: Callable[[], object]) -> dict[str, str]:
    """What a hand-written migration script does: copy a thread, minting a new id per checkpoint.

    Oldest first; each copy's parent is its parent's new id, passed to ``put`` as the
    config's ``checkpoint_id``. Returns old id -> new id. (Pending writes are not copied.)
    """
    tuples = sorted(source.list({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}),
                    key=lambda t: t.config["configurable"]["checkpoint_id"])
    new_ids: dict[str, str] = {}
    for t in tuples:
        configurable = {"thread_id": new_thread_id, "checkpoint_ns": ""}
        if t.parent_config is not None:               # put() records this id as the parent
            configurable["checkpoint_id"] = new_ids[t.parent_config["configurable"]["checkpoint_id"]]
        new_ids[t.config["configurable"]["checkpoint_id"]] = str(mint())
        checkpoint = {**t.checkpoint, "id": new_ids[t.config["configurable"]["checkpoint_id"]]}
        target.put({"configurable": configurable}, checkpoint, dict(t.metadata), dict(checkpoint["channel_versions"]))
    return new_ids
