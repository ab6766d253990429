"""What the Agent Server appendix (chapter 13) serves: graphs, and the auth handlers.

The server imports these by module name (``helpers.agent_graphs:approval_graph``,
``helpers.agent_graphs:auth``), so the graphs are compiled here *without* a checkpointer:
the server brings its own persistence. ``langgraph.json`` points at the compiled graphs,
not at their builders: the server would pass its own config into a builder's
``checkpointer`` parameter. Chapter 13 shows the auth handlers in a cell first (show,
then save).

- :data:`approval_graph` is chapter 07's booking-approval workflow
  (:func:`helpers.approval_workflow.build_approval_workflow`), the same graph, not a copy:
  ``collect -> approve (interrupt) -> analyze | END``; only the resume value ``"yes"``
  approves, and ``analyze`` writes ``analysis``.
- :data:`chat_graph` is chapter 01's chat graph (:func:`helpers.travel_graphs.build_chat_graph`).

Nothing here calls a model: both graphs are deterministic stand-ins, so every run is
reproducible offline. (The graph that keeps a thread busy for the multitask strategies is
``helpers.appendix_graphs``' gated graph: it waits on a file the notebook creates, not on
a timer.)

Auth (``langgraph.json``: ``"auth": {"path": "helpers.agent_graphs:auth"}``): a bearer
token names a user and a tenant (:data:`DEMO_TOKENS` stands in for a real token check);
the handler writes the caller's tenant into a thread's metadata when it is created or
updated (the server writes none of a filter itself), and every thread operation is
filtered by it, so one tenant cannot read, run or find another's
threads. Whatever has no handler of its own is refused.
"""

from __future__ import annotations

from langgraph_sdk import Auth

from helpers import approval_workflow, travel_graphs

# -- auth: the tenant boundary ---------------------------------------------------------

# Demo tokens. A real server verifies a signed token (a JWT from your identity provider)
# in `authenticate` and reads the user and the tenant from its claims.
# shown in solutions/13_agent_server.ipynb
DEMO_TOKENS = {
    "token-alice": {"identity": "alice", "tenant": "acme"},
    "token-bob": {"identity": "bob", "tenant": "globex"},
}

# shown in solutions/13_agent_server.ipynb
auth = Auth()


# shown in solutions/13_agent_server.ipynb
@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    """Who is calling: the user behind the bearer token, with their tenant. No valid token: 401."""
    scheme, _, token = (authorization or "").partition(" ")
    user = DEMO_TOKENS.get(token) if scheme.lower() == "bearer" else None
    if user is None:
        raise Auth.exceptions.HTTPException(status_code=401, detail="missing or unknown bearer token")
    return {"identity": user["identity"], "tenant": user["tenant"]}


# shown in solutions/13_agent_server.ipynb
@auth.on
async def deny_by_default(ctx: Auth.types.AuthContext, value: dict) -> bool:
    """Every resource and action without a handler of its own below is refused (403)."""
    return False


# shown in solutions/13_agent_server.ipynb
@auth.on.assistants.read
@auth.on.assistants.search
async def read_assistants(ctx: Auth.types.AuthContext, value: dict) -> bool:
    """Every signed-in user may look up the graphs the server offers."""
    return True


# shown in solutions/13_agent_server.ipynb
@auth.on.threads
async def own_tenant_only(ctx: Auth.types.AuthContext, value: dict) -> Auth.types.FilterType | bool:
    """Threads and their runs belong to a tenant: write it into what is created or updated, filter by it."""
    tenant = ctx.user.get("tenant")
    if tenant is None:
        return False
    if ctx.action in ("create", "update"):  # the server stores the metadata left here, and adds no tenant
        value.setdefault("metadata", {})["tenant"] = tenant
    return {"tenant": tenant}


# What the Agent Server serves: compiled without a checkpointer (the server adds its own).
approval_graph = approval_workflow.build_approval_workflow()
chat_graph = travel_graphs.build_chat_graph()

# The "graphs" section of a langgraph.json that serves both graphs from this module.
GRAPHS = {
    "approval": "helpers.agent_graphs:approval_graph",
    "chat": "helpers.agent_graphs:chat_graph",
}
