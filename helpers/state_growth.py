"""State growth for chapter 11: trimming messages, and measuring what a thread stores.

A conversation on ``MessagesState`` only grows: every turn appends two messages, and
every checkpoint keeps the list as it was. Two different things can be bounded:

- the *state* a step loads and a model would read: trim it with ``RemoveMessage``
  (:func:`build_trimming_chat_graph`);
- the *history* on disk: checkpoints keep accumulating whatever the state holds, so
  old threads must be deleted (``delete_thread``) by a retention job.

:func:`stored_rows` and :func:`stored_message_copies` read a PostgresSaver's tables to
show both effects with numbers instead of claims.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import RemoveMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from .travel_graphs import stand_in_reply

POSTGRES_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")


def trimmed(messages: list[Any], keep: int) -> list[RemoveMessage]:
    """``RemoveMessage`` updates that drop all but the newest ``keep`` messages."""
    if keep < 0:
        raise ValueError("keep must be >= 0")
    old = messages[: max(0, len(messages) - keep)]
    return [RemoveMessage(id=m.id) for m in old]


def build_trimming_chat_graph(checkpointer: Any = None, *, keep: int = 4) -> Any:
    """The chapter-01 assistant, but the reply node also trims the saved conversation.

    START -> reply -> END, like :func:`helpers.travel_graphs.build_chat_graph` (so a
    turn still makes 3 checkpoints). The stand-in model reads the whole saved list,
    then the node's update removes all but the newest ``keep`` messages, counting the
    reply it adds.
    """

    def reply_and_trim(state: MessagesState) -> dict[str, Any]:
        answer = stand_in_reply(state["messages"])
        return {"messages": [*trimmed(state["messages"], keep - 1), answer]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply_and_trim)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=checkpointer)


def stored_rows(conn: Any, thread_id: str, tables: tuple[str, ...] = POSTGRES_TABLES) -> dict[str, int]:
    """Rows per PostgresSaver table for ``thread_id`` (table names are fixed here, never input)."""
    counts = {}
    for table in tables:
        if table not in POSTGRES_TABLES:
            raise ValueError(f"unknown table {table!r}")
        row = conn.execute(f"SELECT count(*) AS n FROM {table} WHERE thread_id = %s", (thread_id,)).fetchone()
        counts[table] = row["n"] if isinstance(row, dict) else row[0]
    return counts


def stored_message_copies(conn: Any, serde: Any, thread_id: str) -> int:
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
