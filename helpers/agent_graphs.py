"""What the Agent Server appendix (chapter 12) serves: graphs, and the auth handlers.

The server imports these by module name (``helpers.agent_graphs:approval_graph``,
``helpers.agent_graphs:auth``), so the graphs are compiled here *without* a checkpointer:
the server brings its own persistence. A notebook that runs the same workflow locally
calls :func:`build_approval_graph` with the checkpointer it wants. Chapter 12 shows every
definition here in a cell first (show, then save).

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

Auth (``langgraph.json``: ``"auth": {"path": "helpers.agent_graphs:auth"}``): a bearer
token names a user and a tenant (:data:`DEMO_TOKENS` stands in for a real token check);
every thread is stamped with the caller's tenant when it is created, and every other
thread operation is filtered by it, so one tenant cannot read, run or find another's
threads. Whatever has no handler of its own is refused.
"""

from __future__ import annotations

from typing import TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import interrupt
from langgraph_sdk import Auth

from helpers.travel_graphs import build_chat_graph

APPROVAL_QUESTION = "Approve this request?"
YES_WORDS = frozenset({"yes", "y", "approve", "approved", "ok", "true"})
NO_WORDS = frozenset({"no", "n", "reject", "rejected", "deny", "false"})


class ApprovalState(TypedDict, total=False):
    """State of the approval workflow. ``approved`` is None until someone has answered."""

    request: str
    approved: bool | None
    result: str | None


def approval_decision(answer: object) -> bool:
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


def collect(state: ApprovalState) -> dict[str, str | None]:
    """Normalise the request and reset the decision, so every run starts undecided."""
    return {"request": " ".join(str(state.get("request", "")).split()), "approved": None, "result": None}


def approve(state: ApprovalState) -> dict[str, bool]:
    """Pause for a human decision.

    On resume the node runs again from its first line and ``interrupt`` returns the
    resume value instead of pausing: that is why nothing before it has side effects.
    """
    answer = interrupt({"question": APPROVAL_QUESTION, "request": state["request"]})
    return {"approved": approval_decision(answer)}


def route_after_approval(state: ApprovalState) -> str:
    """Approved requests go on to ``analyze``; rejected ones end the run here."""
    return "analyze" if state.get("approved") else END


def analyze(state: ApprovalState) -> dict[str, str]:
    """A deterministic stand-in for real work: describe the approved request."""
    request = state["request"]
    return {"result": f"Analysed {request!r}: {len(request.split())} words, {len(request)} characters."}


def build_approval_graph(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
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


# -- auth: the tenant boundary ---------------------------------------------------------

# Demo tokens. A real server verifies a signed token (a JWT from your identity provider)
# in `authenticate` and reads the user and the tenant from its claims.
DEMO_TOKENS = {
    "token-alice": {"identity": "alice", "tenant": "acme"},
    "token-bob": {"identity": "bob", "tenant": "globex"},
}

auth = Auth()


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    """Who is calling: the user behind the bearer token, with their tenant. No valid token: 401."""
    scheme, _, token = (authorization or "").partition(" ")
    user = DEMO_TOKENS.get(token) if scheme.lower() == "bearer" else None
    if user is None:
        raise Auth.exceptions.HTTPException(status_code=401, detail="missing or unknown bearer token")
    return {"identity": user["identity"], "tenant": user["tenant"]}


@auth.on
async def deny_by_default(ctx: Auth.types.AuthContext, value: dict) -> bool:
    """Every resource and action without a handler of its own below is refused (403)."""
    return False


@auth.on.assistants.read
@auth.on.assistants.search
async def read_assistants(ctx: Auth.types.AuthContext, value: dict) -> bool:
    """Every signed-in user may look up the graphs the server offers."""
    return True


@auth.on.threads
async def own_tenant_only(ctx: Auth.types.AuthContext, value: dict) -> Auth.types.FilterType | bool:
    """Threads and their runs belong to a tenant: stamp it on create, filter by it on everything else."""
    tenant = ctx.user.get("tenant")
    if tenant is None:
        return False
    if ctx.action == "create":
        value.setdefault("metadata", {})["tenant"] = tenant
    return {"tenant": tenant}


# What the Agent Server serves: compiled without a checkpointer (the server adds its own).
approval_graph = build_approval_graph()
chat_graph = build_chat_graph()

# The "graphs" section of a langgraph.json that serves both graphs from this module.
GRAPHS = {
    "approval": "helpers.agent_graphs:approval_graph",
    "chat": "helpers.agent_graphs:chat_graph",
}
