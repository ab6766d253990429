"""The course's running example: a small travel assistant, built without a model.

Where a real assistant would call a language model, these graphs use a deterministic
stand-in node (:func:`stand_in_reply`). It answers from the messages it is given, so every
output is reproducible offline and without an API key, and it still shows the one thing
that matters here: the reply can only use what the graph state hands it.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph

SEAT_WORDS = ("window", "aisle", "middle")


def remembered_seat(messages: Iterable[BaseMessage]) -> str | None:
    """The last seat preference the user stated in ``messages``, if any."""
    seat = None
    for message in messages:
        if isinstance(message, HumanMessage):
            for word in SEAT_WORDS:
                if re.search(rf"\b{word}\b", str(message.content), re.IGNORECASE) and "?" not in str(message.content):
                    seat = word
    return seat


def stand_in_reply(messages: list[BaseMessage]) -> AIMessage:
    """A deterministic stand-in for a model call: answer from ``messages`` only."""
    last = str(messages[-1].content) if messages else ""
    if "?" in last and re.search(r"\b(where|which|what)\b", last, re.IGNORECASE):
        seat = remembered_seat(messages[:-1])
        text = f"You asked for {_a(seat)} {seat} seat." if seat else "I don't know: you haven't told me a seat preference."
    else:
        seat = remembered_seat(messages[-1:])
        text = f"Noted: {_a(seat)} {seat} seat." if seat else "Noted."
    return AIMessage(content=text)


def _a(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def reply(state: MessagesState) -> dict[str, Any]:
    """The assistant node: the stand-in model sees the whole saved conversation."""
    return {"messages": [stand_in_reply(state["messages"])]}


def reply_to_last_only(state: MessagesState) -> dict[str, Any]:
    """A node that passes only the newest message to the stand-in model."""
    return {"messages": [stand_in_reply(state["messages"][-1:])]}


def build_chat_graph(checkpointer: Any = None, *, last_message_only: bool = False):
    """START -> reply -> END on MessagesState, compiled with ``checkpointer``."""
    node = reply_to_last_only if last_message_only else reply
    builder = StateGraph(MessagesState)
    builder.add_node("reply", node)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=checkpointer)


def say(graph: Any, thread_id: str, text: str, **config: Any) -> str:
    """Send one user message on ``thread_id`` and return the assistant's answer text."""
    result = graph.invoke({"messages": [HumanMessage(content=text)]},
                          {"configurable": {"thread_id": thread_id, **config}})
    return str(result["messages"][-1].content)


def transcript(messages: Iterable[BaseMessage]) -> list[str]:
    """Messages as ``"human: ..."`` / ``"ai: ..."`` lines (no random message ids)."""
    return [f"{m.type}: {m.content}" for m in messages]
