"""State growth for chapter 12: trimming, summaries, references instead of content, and what a thread stores.

A conversation on ``MessagesState`` only grows: every turn appends two messages, and
every checkpoint keeps the state as it was. Two different things can be bounded:

- the *state* a step loads and a model would read: trim it with ``RemoveMessage``
  (:func:`build_trimming_chat_graph`), or fold old messages into a summary before
  removing them (:func:`build_summarizing_chat_graph`);
- the *history* on disk: checkpoints keep accumulating whatever the state holds, so
  keep big content out of the state (:func:`build_fare_rules_graph` with a store keeps
  only a key) and delete old threads (``delete_thread``) with a retention job.

The graphs are shown, then saved, in chapter 12 (their definitions here are identical to
the chapter's cells). :func:`stored_rows`, :func:`stored_bytes` and
:func:`stored_message_copies` read a PostgresSaver's tables, to show the effects with
numbers instead of claims.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypedDict

from langchain_core.messages import AnyMessage, HumanMessage, RemoveMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from psycopg import Connection

from helpers import travel_graphs

POSTGRES_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")


# -- trimming and summarising (chapter 12, "State growth") -----------------------------


# shown in solutions/12_production_backends.ipynb
def messages_to_remove(messages: Sequence[AnyMessage], keep: int) -> list[RemoveMessage]:
    """``RemoveMessage`` updates that drop all but the newest ``keep`` messages."""
    if keep < 0:
        raise ValueError("keep must be >= 0")
    return [RemoveMessage(id=m.id) for m in messages[: max(0, len(messages) - keep)]]


# shown in solutions/12_production_backends.ipynb
def build_trimming_chat_graph(checkpointer: BaseCheckpointSaver | None = None, *, keep: int = 4) -> CompiledStateGraph:
    """The chapter-01 assistant, but its node also trims the saved conversation to ``keep`` messages.

    START -> reply -> END on MessagesState (so a turn still makes 3 checkpoints). The
    stand-in model reads the whole saved list; the update then removes all but the
    newest ``keep - 1`` messages and adds the reply.
    """

    def reply_and_trim(state: MessagesState) -> dict[str, list[AnyMessage]]:
        answer = travel_graphs.stand_in_reply(state["messages"])
        return {"messages": [*messages_to_remove(state["messages"], keep - 1), answer]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply_and_trim)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=checkpointer)


# shown in solutions/12_production_backends.ipynb
class SummaryState(MessagesState):
    """The conversation, plus ``summary``: what the removed messages said."""

    summary: str


# shown in solutions/12_production_backends.ipynb
def summarize(summary: str, old: Sequence[AnyMessage]) -> str:
    """A stand-in summariser (a real one calls a model): keep what the user stated, drop questions and replies."""
    stated = [str(m.content) for m in old if isinstance(m, HumanMessage) and "?" not in str(m.content)]
    return " ".join([summary, *stated]).strip()


# shown in solutions/12_production_backends.ipynb
def build_summarizing_chat_graph(checkpointer: BaseCheckpointSaver | None = None, *,
                                 keep: int = 4) -> CompiledStateGraph:
    """Like :func:`build_trimming_chat_graph`, but the removed messages are folded into ``summary`` first.

    The stand-in model reads the summary as the first message, then the kept messages.
    """

    def reply_and_summarize(state: SummaryState) -> dict[str, str | list[AnyMessage]]:
        summary = state.get("summary", "")
        seen = [HumanMessage(summary), *state["messages"]] if summary else state["messages"]
        answer = travel_graphs.stand_in_reply(seen)
        old = state["messages"][: max(0, len(state["messages"]) - (keep - 1))]
        removals = messages_to_remove(state["messages"], keep - 1)
        return {"summary": summarize(summary, old), "messages": [*removals, answer]}

    builder = StateGraph(SummaryState)
    builder.add_node("reply", reply_and_summarize)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=checkpointer)


# -- big content: in the state, or in a store with a key in the state -------------------

# shown in solutions/12_production_backends.ipynb
RULE_WORDS = ("fare", "change", "refund", "fee", "departure", "return", "ticket", "cabin", "baggage", "seat")


# shown in solutions/12_production_backends.ipynb
def fare_rules(route: str) -> str:
    """A stand-in for a supplier's fare-rules document: about 110 KB of text, the same every time for a route."""
    rng = random.Random(route)
    return "\n".join(f"{route} rule {n}: " + " ".join(rng.choices(RULE_WORDS, k=12)) for n in range(1200))


# shown in solutions/12_production_backends.ipynb
class RulesState(TypedDict, total=False):
    """``rules`` holds the whole document; ``rules_key`` only names it in the store."""

    route: str
    question: str
    rules: str
    rules_key: str
    answer: str


# shown in solutions/12_production_backends.ipynb
def rules_into_state(state: RulesState) -> dict[str, str]:
    """Fetch the document and keep it in the state (every later checkpoint carries it)."""
    return {"rules": fare_rules(state["route"])}


# shown in solutions/12_production_backends.ipynb
def rules_into_store(state: RulesState, runtime: Runtime) -> dict[str, str]:
    """Fetch the document, put it in the store once, and keep only its key in the state."""
    key = f"{state['route']}-rules"
    runtime.store.put(("fare-rules",), key, {"text": fare_rules(state["route"])})
    return {"rules_key": key}


# shown in solutions/12_production_backends.ipynb
def answer_from_rules(state: RulesState, runtime: Runtime) -> dict[str, str]:
    """Count the rules that mention the question's word, reading the document from wherever it is."""
    text = state.get("rules") or runtime.store.get(("fare-rules",), state["rules_key"]).value["text"]
    hits = sum(state["question"] in line for line in text.splitlines())
    return {"answer": f"{hits} rules mention {state['question']!r}"}


# shown in solutions/12_production_backends.ipynb
def build_fare_rules_graph(checkpointer: BaseCheckpointSaver | None = None, *,
                           store: BaseStore | None = None) -> CompiledStateGraph:
    """START -> fetch_rules -> answer -> END. With a ``store``, the document goes there and the state keeps its key."""
    builder = StateGraph(RulesState)
    builder.add_node("fetch_rules", rules_into_state if store is None else rules_into_store)
    builder.add_node("answer", answer_from_rules)
    builder.add_edge(START, "fetch_rules")
    builder.add_edge("fetch_rules", "answer")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=checkpointer, store=store)


# -- measuring a PostgresSaver's tables (plumbing) ---------------------------------------


def _checked(tables: tuple[str, ...]) -> tuple[str, ...]:
    for table in tables:
        if table not in POSTGRES_TABLES:
            raise ValueError(f"unknown table {table!r}")
    return tables


def _number(row: object, key: str) -> int:
    return int(row[key] if isinstance(row, dict) else row[0])  # dict_row or tuple rows


def stored_rows(conn: Connection, thread_id: str, tables: tuple[str, ...] = POSTGRES_TABLES) -> dict[str, int]:
    """Rows per PostgresSaver table for ``thread_id`` (table names are fixed here, never input)."""
    return {table: _number(conn.execute(f"SELECT count(*) AS n FROM {table} WHERE thread_id = %s",
                                        (thread_id,)).fetchone(), "n")
            for table in _checked(tables)}


# What each table stores per row, as bytes before PostgreSQL compresses large values.
_PAYLOAD = {"checkpoints": "octet_length(checkpoint::text) + octet_length(metadata::text)",
            "checkpoint_blobs": "coalesce(octet_length(blob), 0)",
            "checkpoint_writes": "octet_length(blob)"}


def stored_bytes(conn: Connection, thread_id: str, tables: tuple[str, ...] = POSTGRES_TABLES) -> dict[str, int]:
    """Bytes of checkpoint JSON + metadata, blobs and writes per table for ``thread_id`` (uncompressed)."""
    return {table: _number(conn.execute(f"SELECT coalesce(sum({_PAYLOAD[table]}), 0) AS n FROM {table} "
                                        "WHERE thread_id = %s", (thread_id,)).fetchone(), "n")
            for table in _checked(tables)}


def stored_message_copies(conn: Connection, serde: SerializerProtocol, thread_id: str) -> int:
    """How many messages the stored versions of the ``messages`` channel hold together.

    PostgresSaver writes one blob per *version* of a channel, and each blob holds the
    whole list as it was then: n versions of a growing list store 1 + 2 + ... copies.
    """
    rows = conn.execute("SELECT type, blob FROM checkpoint_blobs WHERE thread_id = %s AND channel = 'messages'",
                        (thread_id,)).fetchall()
    total = 0
    for row in rows:
        kind, blob = (row["type"], row["blob"]) if isinstance(row, dict) else row
        value = serde.loads_typed((kind, bytes(blob)))
        total += len(value or [])
    return total
