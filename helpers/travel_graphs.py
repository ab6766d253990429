"""The course's running example: a small travel assistant, built without a model.

Chapter 01 writes every definition in this module in a cell and runs it there first; the
cell carries a ``# saved as helpers.travel_graphs.<name>`` line, and
tests/course/test_show_then_save.py keeps the two identical. Later chapters (and
the child process of chapter 01) import them from here.

Where a real assistant would call a language model, these graphs use a deterministic
stand-in (:func:`stand_in_reply`). It answers only from the messages it is handed, so
every output is reproducible offline and without an API key, and it still shows the one
thing that matters here: a reply can only use what the node hands the model.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph


# shown in solutions/01_threads.ipynb
def remembered_seat(messages: list[BaseMessage]) -> str | None:
    """The seat the user last asked for in ``messages`` (questions do not count)."""
    seat = None
    for message in messages:
        text = str(message.content)
        if isinstance(message, HumanMessage) and "?" not in text:
            for word in ("window", "aisle", "middle"):
                if re.search(rf"\b{word}\b", text, re.IGNORECASE):
                    seat = word
    return seat


# shown in solutions/01_threads.ipynb
def stand_in_reply(messages: list[BaseMessage]) -> AIMessage:
    """A deterministic stand-in for a model call: it answers from ``messages`` only."""
    last = str(messages[-1].content) if messages else ""
    if "?" in last and re.search(r"\b(where|which|what)\b", last, re.IGNORECASE):
        seat = remembered_seat(messages[:-1])
        if seat is None:
            return AIMessage("I don't know: you haven't told me a seat preference.")
        return AIMessage(f"You asked for {'an' if seat == 'aisle' else 'a'} {seat} seat.")
    seat = remembered_seat(messages[-1:])
    return AIMessage(f"Noted: {'an' if seat == 'aisle' else 'a'} {seat} seat." if seat else "Noted.")


# shown in solutions/01_threads.ipynb
def reply(state: MessagesState) -> dict[str, list[AIMessage]]:
    """The assistant node: it hands the stand-in model the whole conversation in the state."""
    return {"messages": [stand_in_reply(state["messages"])]}


# shown in solutions/01_threads.ipynb
def transcript(messages: list[BaseMessage]) -> list[str]:
    """Messages as ``"human: ..."`` / ``"ai: ..."`` lines (without their random ids)."""
    return [f"{m.type}: {m.content}" for m in messages]


# shown in solutions/01_threads.ipynb
def reply_to_last_only(state: MessagesState) -> dict[str, list[AIMessage]]:
    """A careless node: it hands the stand-in model only the newest message."""
    return {"messages": [stand_in_reply(state["messages"][-1:])]}


# shown in solutions/01_threads.ipynb
def build_chat_graph(checkpointer: BaseCheckpointSaver | None = None, *,
                     last_message_only: bool = False) -> CompiledStateGraph:
    """START -> reply -> END on MessagesState, compiled with ``checkpointer``."""
    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply_to_last_only if last_message_only else reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=checkpointer)


# shown in solutions/01_threads.ipynb
def say(graph: CompiledStateGraph, thread_id: str, text: str, **config: Any) -> str:
    """Send one user message on ``thread_id`` and return the text of the assistant's answer."""
    result = graph.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread_id, **config}})
    return str(result["messages"][-1].content)
