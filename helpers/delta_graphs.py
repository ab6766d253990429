"""Chapter 15's assistant with ``messages`` declared as a ``DeltaChannel`` (beta), and its reducer.

Shown in chapter 15 (``DeltaChannel``), reused by chapter 16 and its check of exercise 16.2
(a ``prune`` must refuse such threads). No ``from __future__ import annotations`` here: the
state class inside :func:`build_delta_chat_graph` needs its annotation evaluated where it
is defined, with ``snapshot_frequency`` in scope.
"""

import functools
from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph

from . import travel_graphs


# shown in solutions/15_small_threads.ipynb
def add_message_batch(messages: list[AnyMessage], writes: list[list[AnyMessage]]) -> list[AnyMessage]:
    """A DeltaChannel reducer: apply each write (a list of messages) with add_messages, in order."""
    return functools.reduce(add_messages, writes, messages)


# shown in solutions/15_small_threads.ipynb
def build_delta_chat_graph(checkpointer: BaseCheckpointSaver | None = None, *,
                           snapshot_frequency: int = 100) -> CompiledStateGraph:
    """Chapter 01's assistant, with `messages` declared as a DeltaChannel."""

    class DeltaMessagesState(TypedDict):
        messages: Annotated[list[AnyMessage], DeltaChannel(add_message_batch, snapshot_frequency=snapshot_frequency)]

    def reply(state: DeltaMessagesState) -> dict[str, list[AIMessage]]:
        return {"messages": [travel_graphs.stand_in_reply(state["messages"])]}

    builder = StateGraph(DeltaMessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=checkpointer)
