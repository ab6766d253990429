"""The booking-approval workflow of chapter 07 (interrupts), and small graphs around it.

The workflow follows the source article's "document analysis with approval" agent, in
travel-assistant terms::

    START -> collect -> approve --("yes")--> analyze -> END
                           \\--(anything else)--> END

- ``collect`` gathers the fare quotes for the request (a deterministic stand-in for a
  search service);
- ``approve`` pauses with :func:`langgraph.types.interrupt` until someone answers;
- ``analyze`` picks the cheapest quote (a stand-in for a model call).

It is meant to be run on a SQLite file by one process until it pauses, and resumed later
by another process: :data:`NODE_CALLS` counts node calls *in the current process*, so each
process can report what it ran itself. The module keeps no other state between calls.

Also here: :func:`build_chain` (a linear graph from a few node functions),
:func:`build_parallel_approvals` (two approvals that pause in the same super-step) and
:class:`Outbox` / :func:`send_confirmation` (a counted stand-in for sending an e-mail).
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any, Callable, Literal, Sequence, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

QUOTES = {
    "PEK-SFO": [("Air A", 620), ("Air B", 540), ("Air C", 585)],
    "PEK-CDG": [("Air D", 480), ("Air E", 455)],
}
DEFAULT_QUOTES = [("Air Z", 500)]

NODE_CALLS: Counter[str] = Counter()
"""Node calls of the approval workflow in this process (reset with ``NODE_CALLS.clear()``)."""


class TripApproval(TypedDict, total=False):
    """State of the approval workflow. ``documents`` are ``"airline: price"`` strings."""

    request: str
    documents: list[str]
    approved: bool
    analysis: str


def collect(state: TripApproval) -> dict[str, Any]:
    """Gather the fare quotes for the requested route (stand-in for a search service)."""
    NODE_CALLS["collect"] += 1
    route = state["request"].split(",")[0].strip().upper()
    return {"documents": [f"{airline}: {price}" for airline, price in QUOTES.get(route, DEFAULT_QUOTES)]}


def approve(state: TripApproval) -> dict[str, Any]:
    """Pause until a person answers; only the exact answer ``"yes"`` approves.

    Runs again from its first line on resume, so it has no side effects before
    ``interrupt``.
    """
    NODE_CALLS["approve"] += 1
    decision = interrupt({"action": "approve_booking", "request": state["request"],
                          "doc_count": len(state["documents"])})
    return {"approved": decision == "yes"}


def route_after_approval(state: TripApproval) -> Literal["analyze", "__end__"]:
    """Approved requests go on to ``analyze``; everything else ends the run."""
    return "analyze" if state.get("approved") else END


def analyze(state: TripApproval) -> dict[str, Any]:
    """Pick the cheapest quote (a deterministic stand-in for a model's analysis)."""
    NODE_CALLS["analyze"] += 1
    quotes = [(int(doc.rsplit(":", 1)[1]), doc.split(":")[0]) for doc in state["documents"]]
    price, airline = min(quotes)
    return {"analysis": f"book {airline} at {price} EUR (cheapest of {len(quotes)})"}


def build_approval_workflow(checkpointer: Any) -> Any:
    """collect -> approve -> analyze | END, compiled with ``checkpointer``."""
    builder = StateGraph(TripApproval)
    builder.add_node("collect", collect)
    builder.add_node("approve", approve)
    builder.add_node("analyze", analyze)
    builder.add_edge(START, "collect")
    builder.add_edge("collect", "approve")
    builder.add_conditional_edges("approve", route_after_approval, ["analyze", END])
    builder.add_edge("analyze", END)
    return builder.compile(checkpointer=checkpointer)


def build_chain(state_schema: type, nodes: Sequence[Callable[..., Any]], checkpointer: Any) -> Any:
    """START -> nodes[0] -> nodes[1] -> ... -> END; each node is named after its function."""
    if not nodes:
        raise ValueError("build_chain needs at least one node")
    builder = StateGraph(state_schema)
    names = [node.__name__ for node in nodes]
    if len(set(names)) != len(names):
        raise ValueError(f"node functions need distinct names, got {names}")
    for node in nodes:
        builder.add_node(node.__name__, node)
    for a, b in zip([START, *names], [*names, END]):
        builder.add_edge(a, b)
    return builder.compile(checkpointer=checkpointer)


class ParallelApproval(TypedDict, total=False):
    """State of the two parallel approvals: each approver's answer."""

    trip: str
    fare_answer: str
    upgrade_answer: str


APPROVAL_REQUESTS = {
    "approve_fare": {"approver": "finance", "item": "fare", "amount": 540, "limit": 600},
    "approve_upgrade": {"approver": "manager", "item": "seat upgrade", "amount": 180, "limit": 150},
}


def _approval_node(name: str, channel: str, request: dict[str, Any]) -> Callable[[ParallelApproval], dict[str, Any]]:
    def node(state: ParallelApproval) -> dict[str, Any]:
        return {channel: interrupt(dict(request))}

    node.__name__ = name
    return node


def build_parallel_approvals(checkpointer: Any, requests: dict[str, dict[str, Any]] | None = None) -> Any:
    """START fans out to ``approve_fare`` and ``approve_upgrade``; both call ``interrupt``.

    Both pause in the same super-step, so a run ends with two pending interrupts whose
    values are ``requests[node]`` (default :data:`APPROVAL_REQUESTS`: approver, item,
    amount, limit). The answers land in ``fare_answer`` and ``upgrade_answer``.
    """
    requests = {**APPROVAL_REQUESTS, **(requests or {})}
    builder = StateGraph(ParallelApproval)
    for name, channel in (("approve_fare", "fare_answer"), ("approve_upgrade", "upgrade_answer")):
        builder.add_node(name, _approval_node(name, channel, requests[name]))
        builder.add_edge(START, name)
        builder.add_edge(name, END)
    return builder.compile(checkpointer=checkpointer)


class Outbox:
    """A counted stand-in for an e-mail service: ``sent`` lists every message sent."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self._lock = threading.Lock()

    def send(self, text: str) -> None:
        with self._lock:
            self.sent.append(text)

    def clear(self) -> None:
        with self._lock:
            self.sent.clear()


outbox = Outbox()
"""The module's outbox, used by :func:`send_confirmation`."""


def send_confirmation(fare: Any) -> None:
    """Send the traveller a booking confirmation for ``fare`` (recorded in :data:`outbox`)."""
    outbox.send(f"booked at {fare} EUR")


def run_and_resume(graph: Any, thread_id: str, inputs: Any, *answers: Any) -> dict[str, Any]:
    """Invoke ``graph`` with ``inputs`` on ``thread_id``, then resume once per answer.

    Each answer is sent as ``Command(resume=answer)``. Returns the last result (which
    still has ``__interrupt__`` if the run is paused again).
    """
    from langgraph.types import Command

    config = {"configurable": {"thread_id": thread_id}}
    result = graph.invoke(inputs, config)
    for answer in answers:
        result = graph.invoke(Command(resume=answer), config)
    return result
