"""A small, safe way to give each tenant's conversation its own LangGraph thread.

A checkpointer keys state by ``thread_id`` (then ``checkpoint_ns``, ``checkpoint_id``) and
nothing else: a ``tenant_id`` in the config is only copied into checkpoint metadata, two
tenants who both use thread ``"42"`` share one history, and two graphs on one saver and
thread read each other's state. :class:`ThreadDirectory` is the server-side fix:

- the client only ever names a *conversation* it owns, never a thread;
- the server looks the conversation up, refuses it (:class:`AccessDenied`) unless the
  caller's tenant and user own it, and the same refusal covers unknown conversations, so
  a caller cannot probe which conversations exist;
- each (conversation, graph) pair gets its own opaque random ``thread_id``: unguessable,
  carrying no personal data, and different for two graphs sharing a saver.

It keeps its table in memory (a dict behind a lock); a real service keeps the same rows in
its database (chapter 11's command ledger does). :func:`build_fare_desk_graph` is a second
graph for the "two graphs, one saver" trap.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph


class AccessDenied(PermissionError):
    """The caller does not own the conversation (or it does not exist: same answer)."""


@dataclass
class Conversation:
    conversation_id: str
    tenant_id: str
    user_id: str
    threads: dict[str, str] = field(default_factory=dict)


def new_opaque_id() -> str:
    """128 random bits as 32 hex digits: unguessable, and about no one."""
    return secrets.token_hex(16)


class ThreadDirectory:
    """Server-side map: owned conversation -> opaque thread_id per graph, with an owner check."""

    def __init__(self, new_id: Callable[[], str] = new_opaque_id) -> None:
        self._new_id = new_id
        self._conversations: dict[str, Conversation] = {}
        self._lock = threading.Lock()

    def open_conversation(self, tenant_id: str, user_id: str) -> str:
        """Create a conversation owned by (tenant, user); return its opaque id for the client."""
        with self._lock:
            conversation_id = self._new_id()
            self._conversations[conversation_id] = Conversation(conversation_id, tenant_id, user_id)
            return conversation_id

    def _owned(self, tenant_id: str, user_id: str, conversation_id: str) -> Conversation:
        found = self._conversations.get(conversation_id)
        if found is None or (found.tenant_id, found.user_id) != (tenant_id, user_id):
            raise AccessDenied("conversation not found for this caller")
        return found

    def thread_id(self, tenant_id: str, user_id: str, conversation_id: str, graph: str = "chat") -> str:
        """The thread for ``graph`` in an owned conversation (created on first use)."""
        with self._lock:
            conversation = self._owned(tenant_id, user_id, conversation_id)
            if graph not in conversation.threads:
                conversation.threads[graph] = self._new_id()
            return conversation.threads[graph]

    def config_for(self, tenant_id: str, user_id: str, conversation_id: str, graph: str = "chat") -> dict[str, Any]:
        """A LangGraph config for an owned conversation; raises :class:`AccessDenied` otherwise."""
        return {"configurable": {"thread_id": self.thread_id(tenant_id, user_id, conversation_id, graph)}}

    def threads_of_tenant(self, tenant_id: str) -> list[str]:
        """Every thread_id of a tenant (for retention jobs: ``saver.delete_thread`` each)."""
        with self._lock:
            return sorted(thread for conversation in self._conversations.values()
                          if conversation.tenant_id == tenant_id for thread in conversation.threads.values())


# shown in solutions/10_business_ids.ipynb
def fare_desk(state: MessagesState) -> dict[str, Any]:
    """A stand-in fare assistant: it reports how many messages it was handed."""
    return {"messages": [AIMessage(content=f"Fare desk: I see {len(state['messages'])} message(s); "
                                           "the cheapest fare is 180 EUR.")]}


# shown in solutions/10_business_ids.ipynb
def build_fare_desk_graph(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    """START -> fare_desk on MessagesState: a second graph that may share a saver."""
    builder = StateGraph(MessagesState)
    builder.add_node("fare_desk", fare_desk)
    builder.add_edge(START, "fare_desk")
    return builder.compile(checkpointer=checkpointer)
