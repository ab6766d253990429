"""Graphs for the Agent Server appendix: served by ``langgraph dev``, driven with langgraph-sdk.

The server imports these by module name (``helpers.agent_graphs:approval_graph``), so they
are compiled here *without* a checkpointer: the server brings its own persistence. A
notebook that runs the same workflow locally calls :func:`build_approval_graph` with the
checkpointer it wants.

Nothing here calls a model. The approval workflow is deterministic, and the chat graph
reuses the course's stand-in reply node, so every run is reproducible offline. (The graph
that keeps a thread busy for the multitask strategies is ``helpers.appendix_graphs``' gated
graph: it waits on a file the notebook creates, not on a timer.)

Approval workflow::

    START -> collect -> approve --(approved)--> analyze -> END
                           \\--(rejected)--> END

``approve`` calls :func:`langgraph.types.interrupt`; the run pauses there until the
caller resumes it with ``Command(resume=...)`` (or, through the SDK,
``command={"resume": ...}``). Accepted answers: see :func:`approval_decision`.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from helpers.travel_graphs import build_chat_graph

APPROVAL_QUESTION = "Approve this request?"
YES_WORDS = frozenset({"yes", "y", "approve", "approved", "ok", "true"})
NO_WORDS = frozenset({"no", "n", "reject", "rejected", "deny", "false"})


class ApprovalState(TypedDict, total=False):
    """State of the approval workflow. ``approved`` is None until someone has answered."""

    request: str
    approved: bool | None
    result: str | None


def approval_decision(answer: Any) -> bool:
    """Turn a resume value into True (approve) or False (reject).

    Accepts a bool, a yes/no word (``"yes"``, ``"approve"``, ``"no"``, ``"reject"``, ...)
    or a mapping with an ``"approved"`` key. Anything else is a ValueError, so a typo
    never silently approves.
    """
    if isinstance(answer, dict) and "approved" in answer:
        answer = answer["approved"]
    if isinstance(answer, bool):
        return answer
    word = str(answer).strip().lower()
    if word in YES_WORDS:
        return True
    if word in NO_WORDS:
        return False
    raise ValueError(f"not an approval answer: {answer!r} (use True/False, 'yes' or 'no')")


def collect(state: ApprovalState) -> dict[str, Any]:
    """Normalise the request and reset the decision, so every run starts undecided."""
    return {"request": " ".join(str(state.get("request", "")).split()), "approved": None, "result": None}


def approve(state: ApprovalState) -> dict[str, Any]:
    """Pause for a human decision.

    On resume the node runs again from its first line and ``interrupt`` returns the
    resume value instead of pausing: that is why nothing before it has side effects.
    """
    answer = interrupt({"question": APPROVAL_QUESTION, "request": state["request"]})
    return {"approved": approval_decision(answer)}


def route_after_approval(state: ApprovalState) -> str:
    """Approved requests go on to ``analyze``; rejected ones end the run here."""
    return "analyze" if state.get("approved") else END


def analyze(state: ApprovalState) -> dict[str, Any]:
    """A deterministic stand-in for real work: describe the approved request."""
    request = state["request"]
    return {"result": f"Analysed {request!r}: {len(request.split())} words, {len(request)} characters."}


def build_approval_graph(checkpointer: Any = None) -> Any:
    """The approval workflow, compiled with ``checkpointer`` (None for the Agent Server)."""
    builder = StateGraph(ApprovalState)
    builder.add_node("collect", collect)
    builder.add_node("approve", approve)
    builder.add_node("analyze", analyze)
    builder.add_edge(START, "collect")
    builder.add_edge("collect", "approve")
    builder.add_conditional_edges("approve", route_after_approval, ["analyze", END])
    builder.add_edge("analyze", END)
    return builder.compile(checkpointer=checkpointer)


# What the Agent Server serves: compiled without a checkpointer (the server adds its own).
approval_graph = build_approval_graph()
chat_graph = build_chat_graph()

# The "graphs" section of a langgraph.json that serves both graphs from this module.
GRAPHS = {
    "approval": "helpers.agent_graphs:approval_graph",
    "chat": "helpers.agent_graphs:chat_graph",
}
