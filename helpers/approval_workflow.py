"""Chapter 07 (interrupts): the booking-approval workflow and the small graphs around it.

The chapter shows these in cells and saves them here (``# saved as`` lines; a test keeps
both identical):

- :func:`build_chain`: a linear graph from a few node functions;
- :func:`run_and_resume`: invoke, then resume once per answer;
- :func:`build_parallel_approvals`: two approvals that pause in the same super-step;
- :func:`build_approval_workflow`: the source article's "document analysis with approval"
  agent, in travel terms::

      START -> collect -> approve --("yes")--> analyze -> END
                             \\--(anything else)--> END

  ``collect`` gathers fare quotes (a stand-in for a search service), ``approve`` pauses
  with :func:`langgraph.types.interrupt`, ``analyze`` picks the cheapest quote (a stand-in
  for a model call). Its state is JSON-serialisable, and ``build_approval_workflow()``
  compiles without a checkpointer, so a server that brings its own persistence can
  serve it: chapter 13's Agent Server serves this very graph, compiled in
  ``helpers.agent_graphs`` as ``approval_graph = approval_workflow.build_approval_workflow()``.
  :data:`NODE_CALLS` only counts node starts in the current process, so that a process
  can report what it ran itself; the workflow does not depend on it.
- :func:`start_workflows`: what the chapter's "process 1" runs before it exits: four
  requests on a SQLite file, each paused in ``approve``.

Plumbing: :class:`Outbox` / :func:`send_confirmation` (a counted stand-in for sending an
e-mail, used by exercise 07.3).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt

# -- shown in the chapter ---------------------------------------------------------------


# shown in solutions/07_interrupts.ipynb
def build_chain(state_schema: type, nodes: Sequence[Callable],
                checkpointer: BaseCheckpointSaver | None) -> CompiledStateGraph:
    """START -> nodes[0] -> nodes[1] -> ... -> END; each node is named after its function."""
    names = [node.__name__ for node in nodes]
    if not names or len(set(names)) != len(names):
        raise ValueError(f"build_chain needs at least one node and distinct function names, got {names}")
    builder = StateGraph(state_schema)
    for node in nodes:
        builder.add_node(node.__name__, node)
    for left, right in zip([START, *names], [*names, END], strict=True):
        builder.add_edge(left, right)
    return builder.compile(checkpointer=checkpointer)


# shown in solutions/07_interrupts.ipynb
def run_and_resume(graph: CompiledStateGraph, thread_id: str, inputs: dict, *answers: object) -> dict:
    """Invoke ``graph`` on ``thread_id``, then resume once per answer; return the last result."""
    config = {"configurable": {"thread_id": thread_id}}
    result = graph.invoke(inputs, config)
    for answer in answers:
        result = graph.invoke(Command(resume=answer), config)
    return result


# shown in solutions/07_interrupts.ipynb
class ParallelApproval(TypedDict, total=False):
    """The trip to approve and each approver's answer."""

    trip: str
    fare_answer: str
    upgrade_answer: str


# shown in solutions/07_interrupts.ipynb
APPROVAL_REQUESTS = {
    "approve_fare": {"approver": "finance", "item": "fare", "amount": 540, "limit": 600},
    "approve_upgrade": {"approver": "manager", "item": "seat upgrade", "amount": 180, "limit": 150},
}


# shown in solutions/07_interrupts.ipynb
def build_parallel_approvals(checkpointer: BaseCheckpointSaver | None,
                             requests: dict[str, dict] | None = None) -> CompiledStateGraph:
    """START fans out to approve_fare and approve_upgrade, and both pause: two interrupts at once."""
    requests = {**APPROVAL_REQUESTS, **(requests or {})}

    def approve_fare(state: ParallelApproval) -> dict[str, str]:
        return {"fare_answer": interrupt(requests["approve_fare"])}

    def approve_upgrade(state: ParallelApproval) -> dict[str, str]:
        return {"upgrade_answer": interrupt(requests["approve_upgrade"])}

    builder = StateGraph(ParallelApproval)
    builder.add_node("approve_fare", approve_fare)
    builder.add_node("approve_upgrade", approve_upgrade)
    builder.add_edge(START, "approve_fare")
    builder.add_edge(START, "approve_upgrade")
    builder.add_edge("approve_fare", END)
    builder.add_edge("approve_upgrade", END)
    return builder.compile(checkpointer=checkpointer)


# shown in solutions/07_interrupts.ipynb
NODE_CALLS: Counter[str] = Counter()


# shown in solutions/07_interrupts.ipynb
class TripApproval(TypedDict, total=False):
    """The approval workflow's state; plain JSON values only. documents: "airline: price"."""

    request: str
    documents: list[str]
    approved: bool
    analysis: str


# shown in solutions/07_interrupts.ipynb
QUOTES = {"PEK-SFO": ["Air A: 620", "Air B: 540", "Air C: 585"], "PEK-CDG": ["Air D: 480", "Air E: 455"]}


# shown in solutions/07_interrupts.ipynb
def collect(state: TripApproval) -> dict[str, list[str]]:
    """Gather the fare quotes for the requested route (a stand-in for a search service)."""
    NODE_CALLS["collect"] += 1
    route = state["request"].split(",")[0].strip().upper()
    return {"documents": list(QUOTES.get(route, ["Air Z: 500"]))}


# shown in solutions/07_interrupts.ipynb
def approve(state: TripApproval) -> dict[str, bool]:
    """Pause until a person answers; only "yes" approves. Nothing before interrupt() has effects."""
    NODE_CALLS["approve"] += 1
    decision = interrupt({"action": "approve_booking", "request": state["request"],
                          "doc_count": len(state["documents"])})
    return {"approved": decision == "yes"}


# shown in solutions/07_interrupts.ipynb
def route_after_approval(state: TripApproval) -> str:
    """Approved requests go on to analyze; everything else ends the run."""
    return "analyze" if state.get("approved") else END


# shown in solutions/07_interrupts.ipynb
def analyze(state: TripApproval) -> dict[str, str]:
    """Pick the cheapest quote (a deterministic stand-in for a model's analysis)."""
    NODE_CALLS["analyze"] += 1
    price, airline = min((int(doc.split(": ")[1]), doc.split(": ")[0]) for doc in state["documents"])
    return {"analysis": f"book {airline} at {price} EUR (cheapest of {len(state['documents'])})"}


# shown in solutions/07_interrupts.ipynb
def build_approval_workflow(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    """collect -> approve -> analyze | END. Without a checkpointer it pauses but cannot resume."""
    builder = StateGraph(TripApproval)
    builder.add_node("collect", collect)
    builder.add_node("approve", approve)
    builder.add_node("analyze", analyze)
    builder.add_edge(START, "collect")
    builder.add_edge("collect", "approve")
    builder.add_conditional_edges("approve", route_after_approval, ["analyze", END])
    builder.add_edge("analyze", END)
    return builder.compile(checkpointer=checkpointer)


# shown in solutions/07_interrupts.ipynb
def start_workflows(db_path: str) -> None:
    """Process 1: four booking requests on a SQLite file, each on its own thread, each until it pauses."""
    requests = [("booking-101", "PEK-SFO, 2 travellers"), ("booking-102", "PEK-CDG, 1 traveller"),
                ("booking-103", "PEK-SFO, 1 traveller"), ("booking-104", "PEK-CDG, 3 travellers")]
    with SqliteSaver.from_conn_string(db_path) as saver:
        graph = build_approval_workflow(saver)
        for thread_id, request in requests:
            stamp = {} if thread_id == "booking-104" else {"graph_version": "approval-v1"}  # an older client
            config = {"configurable": {"thread_id": thread_id}, "metadata": stamp}
            result = graph.invoke({"request": request}, config)
            print(thread_id, "paused, asking:", result["__interrupt__"][0].value)
    print("node calls in the child:", dict(NODE_CALLS))


# -- plumbing: a counted stand-in for sending e-mail -----------------------------------


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
