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
"""

from __future__ import annotations

import random
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterable, Sequence

#: 100-ns intervals between the UUID epoch 1582-10-15 and the Unix epoch 1970-01-01.
GREGORIAN_TO_UNIX_100NS = 0x01B21DD213814000
UUID_EPOCH = datetime(1582, 10, 15, tzinfo=timezone.utc)

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
    """The super-step LangGraph wrote into clock_seq (14 bits, read as signed: 0x3FFF is -1)."""
    seq = fields(value)["clock_seq"]
    return seq - (1 << 14) if seq >= 1 << 13 else seq


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
    return all(a < b for a, b in zip(items, items[1:]))


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


def parent_chain(saver: Any, config: dict[str, Any]) -> list[dict[str, Any]]:
    """Walk ``parent_config`` links from the checkpoint ``config`` selects back to the root.

    Each row: the id, its parent's id (or None), whether the parent is stored, and whether
    the parent's id sorts before the child's (both None for the root). The walk stops at
    a missing parent.
    """
    rows, current = [], saver.get_tuple(config)
    while current is not None:
        cid = current.config["configurable"]["checkpoint_id"]
        parent_cfg = current.parent_config
        parent = saver.get_tuple(parent_cfg) if parent_cfg else None
        pid = parent_cfg["configurable"]["checkpoint_id"] if parent_cfg else None
        rows.append({"id": cid, "parent_id": pid, "parent_stored": None if pid is None else parent is not None,
                     "parent_sorts_first": None if pid is None else pid < cid,
                     "step": current.metadata.get("step"), "source": current.metadata.get("source")})
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


def copy_thread(source: Any, target: Any, thread_id: str, new_thread_id: str,
                mint: Callable[[], Any]) -> dict[str, str]:
    """Copy a thread's root-namespace checkpoints into ``target``, giving each a new id from ``mint``.

    This is what a hand-written migration script does. Parents are re-linked to the new
    ids, oldest first. Returns old id -> new id. (Pending writes are not copied.)
    """
    tuples = sorted(source.list({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}),
                    key=lambda t: t.config["configurable"]["checkpoint_id"])
    new_ids: dict[str, str] = {}
    for t in tuples:
        old = t.config["configurable"]["checkpoint_id"]
        parent = t.parent_config["configurable"]["checkpoint_id"] if t.parent_config else None
        configurable = {"thread_id": new_thread_id, "checkpoint_ns": ""}
        if parent is not None:
            configurable["checkpoint_id"] = new_ids[parent]
        new_ids[old] = str(mint())
        checkpoint = {**t.checkpoint, "id": new_ids[old]}
        target.put({"configurable": configurable}, checkpoint, dict(t.metadata), dict(checkpoint["channel_versions"]))
    return new_ids
