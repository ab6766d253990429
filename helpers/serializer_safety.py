"""Serializer safety for chapter 12: custom types in state, the allowlist, and the advisories.

A checkpointer turns state into bytes with ``JsonPlusSerializer`` (msgpack). Objects that
are not plain JSON-like data (a dataclass, an Enum, a pydantic model) are written as
"call ``module.name`` with these arguments", and reading the checkpoint back *imports
and calls* that name. Current versions still allow any name, with a logging WARNING
"Deserializing unregistered type …"; an explicit ``allowed_msgpack_modules`` list, or
``LANGGRAPH_STRICT_MSGPACK=true`` in the environment before langgraph is imported,
restricts it.

This module holds what the chapter needs to show that without noise:

- the travel assistant's fare types (:class:`Cabin`, :class:`FareQuote`, :class:`SeatHold`)
  and :func:`build_quote_graph`, whose state holds them (shown, then saved, in chapter 12).
  ``FareQuote`` is declared in the state schema; ``SeatHold`` only travels inside an
  untyped list;
- :func:`watch_serde`, a context manager that records the serializer's events (every
  load, via langgraph's public event hooks) and its log warnings (deduplicated by
  langgraph: once per type and process), and keeps those warnings out of stderr;
- :func:`planted_call`, a checkpoint value that names a function instead of a type, to
  show why a checkpoint database you did not write must never be opened;
- :func:`rows_showing`, which finds a text in a PostgresSaver's tables as it is stored,
  to show what an ``EncryptedSerializer`` encrypts (blobs, writes) and what it does not
  (primitive values inline in the checkpoint JSON, and the metadata);
- :data:`ADVISORIES` and :func:`advisory_rows`: the published advisories and whether the
  installed versions are at or above each fixed version.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from importlib import metadata
from typing import Any, TypedDict

import ormsgpack
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.event_hooks import register_serde_event_listener
from langgraph.checkpoint.serde.jsonplus import EXT_CONSTRUCTOR_SINGLE_ARG
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from psycopg import Connection

SERDE_LOGGER = "langgraph.checkpoint.serde.jsonplus"


# -- the assistant's types ---------------------------------------------------------------


# shown in solutions/12_production_backends.ipynb
class Cabin(Enum):
    ECONOMY = "economy"
    BUSINESS = "business"


# shown in solutions/12_production_backends.ipynb
@dataclass(frozen=True)
class FareQuote:
    route: str
    amount: int
    cabin: Cabin


# shown in solutions/12_production_backends.ipynb
@dataclass(frozen=True)
class SeatHold:
    seat: str


# shown in solutions/12_production_backends.ipynb
class QuoteState(TypedDict, total=False):
    """``quote`` is typed in the schema; ``extras`` is a plain list (its items are untyped)."""

    route: str
    quote: FareQuote
    extras: list


# shown in solutions/12_production_backends.ipynb
def find_fare_quote(state: QuoteState) -> dict[str, FareQuote | list[SeatHold]]:
    """A stand-in fare search: a fixed quote and a seat hold for the route."""
    return {"quote": FareQuote(state["route"], 540, Cabin.ECONOMY), "extras": [SeatHold("12A")]}


# shown in solutions/12_production_backends.ipynb
def build_quote_graph(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    """START -> quote_fare (find_fare_quote) -> END on QuoteState."""
    builder = StateGraph(QuoteState)
    builder.add_node("quote_fare", find_fare_quote)
    builder.add_edge(START, "quote_fare")
    builder.add_edge("quote_fare", END)
    return builder.compile(checkpointer=checkpointer)


CUSTOM_TYPES = (FareQuote, Cabin, SeatHold)


def type_names(value: Any) -> Any:
    """``value`` with every object replaced by its class name (dicts and lists kept)."""
    if isinstance(value, dict):
        return {k: type_names(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [type_names(v) for v in value]
    return type(value).__name__


# -- watching the serializer -------------------------------------------------------------


@dataclass
class SerdeWatch:
    """What the serializer did inside :func:`watch_serde`."""

    events: Counter = field(default_factory=Counter)  # (kind, "module.name") -> count
    warnings: list[str] = field(default_factory=list)  # log messages, in order

    def kinds(self) -> dict[str, int]:
        """Event counts per kind, e.g. ``{"msgpack_unregistered_allowed": 3}``."""
        out: Counter = Counter()
        for (kind, _), n in self.events.items():
            out[kind] += n
        return dict(sorted(out.items()))

    def types(self, kind: str) -> list[str]:
        """Sorted ``module.name`` of the types seen with event ``kind``."""
        return sorted({name for (k, name) in self.events if k == kind})

    def warning_heads(self) -> list[str]:
        """Each warning up to its first period: stable, short, no advice text."""
        return [w.split(" from checkpoint")[0].split(" - ")[0] for w in self.warnings]


class _ListHandler(logging.Handler):
    def __init__(self, sink: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        self.sink.append(record.getMessage())


@contextmanager
def watch_serde(logger_name: str = SERDE_LOGGER) -> Iterator[SerdeWatch]:
    """Record serializer events and WARNINGs; the warnings do not reach stderr meanwhile.

    Events come from ``langgraph.checkpoint.serde.event_hooks`` and fire on every load.
    The WARNING is deduplicated by langgraph itself (once per type per process), so
    count events, not warnings, to compare two serializers.
    """
    watch = SerdeWatch()
    unregister = register_serde_event_listener(
        lambda event: watch.events.update([(event["kind"], f"{event['module']}.{event['name']}")]))
    logger = logging.getLogger(logger_name)
    handler, propagate = _ListHandler(watch.warnings), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield watch
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
        unregister()


# -- a value that calls a function when it is loaded -------------------------------------


def planted_call(module: str, name: str, argument: Any) -> tuple[str, bytes]:
    """A serialized checkpoint value (``(type, bytes)``) meaning "call module.name(argument)".

    This is exactly how a legitimate Enum or single-argument type is stored. Written
    into a checkpoint database by someone else, it makes the *reader* call any
    importable function. The chapter uses the harmless ``builtins.print``.
    """
    payload = ormsgpack.packb([module, name, argument])
    return "msgpack", ormsgpack.packb(ormsgpack.Ext(EXT_CONSTRUCTOR_SINGLE_ARG, payload))


# -- what is readable at rest -------------------------------------------------------------


# Where a PostgresSaver keeps a thread's data: the checkpoint JSON (with inline primitive
# values), its metadata JSON, the blobs of other values, and the pending writes.
_AT_REST = {
    "checkpoint JSON": "SELECT count(*) AS n FROM checkpoints WHERE thread_id = %s "
                       "AND strpos(checkpoint::text, %s) > 0",
    "metadata": "SELECT count(*) AS n FROM checkpoints WHERE thread_id = %s AND strpos(metadata::text, %s) > 0",
    "blobs": "SELECT count(*) AS n FROM checkpoint_blobs WHERE thread_id = %s "
             "AND position(convert_to(%s, 'UTF8') IN coalesce(blob, ''::bytea)) > 0",
    "writes": "SELECT count(*) AS n FROM checkpoint_writes WHERE thread_id = %s "
              "AND position(convert_to(%s, 'UTF8') IN blob) > 0",
}


def rows_showing(conn: Connection, thread_id: str, text: str) -> dict[str, int]:
    """Rows of ``thread_id`` in a PostgresSaver's tables whose stored bytes contain ``text`` as it is.

    A count above 0 means anyone who can read the database (or a backup of it) can read
    ``text`` there. Keys: ``checkpoint JSON``, ``metadata``, ``blobs``, ``writes``.
    """
    counts = {}
    for place, sql in _AT_REST.items():
        row = conn.execute(sql, (thread_id, text)).fetchone()
        counts[place] = int(row["n"] if isinstance(row, dict) else row[0])
    return counts


# -- advisories --------------------------------------------------------------------------


@dataclass(frozen=True)
class Advisory:
    advisory: str
    package: str
    affected: str
    fixed: str
    what: str


# The published advisories (GitHub security advisories of the langgraph repository, and the
# CVE records they name), as chapter 12's advisories table shows them: never run below `fixed`.
ADVISORIES = (
    Advisory("CVE-2025-64439", "langgraph-checkpoint", "< 3.0.0", "3.0.0",
             "RCE via JsonPlusSerializer 'json' fallback"),
    Advisory("CVE-2025-67644", "langgraph-checkpoint-sqlite", "< 3.0.1", "3.0.1",
             "SQL injection through metadata filter keys in list()"),
    Advisory("CVE-2025-8709", "langgraph-checkpoint-sqlite", "2.0.10", "2.0.11",
             "SQL injection through SqliteStore filter keys"),
    Advisory("CVE-2026-28277", "langgraph", "<= 1.0.9", "1.0.10",
             "unsafe msgpack deserialization on checkpoint load"),
    Advisory("CVE-2026-27794", "langgraph-checkpoint", "< 4.0.0", "4.0.0",
             "pickle fallback in BaseCache"),
    Advisory("CVE-2026-48775", "langgraph-checkpoint", "<= 4.1.0", "4.1.1",
             "JSON envelope object revival"),
)


def installed_version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def release(version: str) -> tuple[int, ...]:
    """The numeric release part of a version: ``"4.3.2"`` -> ``(4, 3, 2)``, ``"1.0.10rc1"`` -> ``(1, 0, 10)``."""
    match = re.match(r"\d+(?:\.\d+)*", version.strip())
    if not match:
        raise ValueError(f"not a version: {version!r}")
    return tuple(int(part) for part in match.group().split("."))


def at_least(installed: str | None, fixed: str) -> bool:
    """Is ``installed`` at or above ``fixed``? Not installed, or a pre-release of ``fixed``: False."""
    if installed is None:
        return False
    try:
        have, need = release(installed), release(fixed)
    except ValueError:
        return False
    width = max(len(have), len(need))
    have, need = have + (0,) * (width - len(have)), need + (0,) * (width - len(need))
    if have != need:
        return have > need
    return re.fullmatch(r"\d+(?:\.\d+)*(?:\.post\d+)?", installed.strip()) is not None  # 1.0.10rc1 < 1.0.10


def advisory_rows(advisories: tuple[Advisory, ...] = ADVISORIES,
                  version_of: Callable[[str], str | None] = installed_version) -> list[dict[str, str]]:
    """One row per advisory: the fixed version, what is installed, and ``ok`` (yes/NO)."""
    rows = []
    for adv in advisories:
        installed = version_of(adv.package)
        rows.append({"advisory": adv.advisory, "package": adv.package, "fixed": adv.fixed,
                     "installed": installed or "not installed",
                     "ok": "yes" if at_least(installed, adv.fixed) else "NO"})
    return rows
