"""A graph for the Agent Server appendix (chapter 13) that stays busy until released.

To show what a second run on a busy thread does (the server's *multitask strategies*),
the first run must still be running when the second one arrives, every time. A timed
sleep would make that a race. :func:`wait_at_gate` instead waits until a *gate file*
appears in a directory the notebook owns: the notebook starts the first run, sees through the SDK
that it is ``running`` with ``wait_at_gate`` next, sends the second run, and only then opens the gate with
:func:`open_gate`. The order is decided by the notebook, not by a clock.

The node is ``async`` on purpose: when the server cancels a run (the ``interrupt`` and
``rollback`` strategies), it cancels the task, and an ``await`` is where a cancellation
lands. A blocking ``time.sleep`` loop would keep running in its thread.

Served with :func:`helpers.servers.agent_server` as ``{"gated": GATED_GRAPH_SPEC}``
(compiled without a checkpointer: the server brings its own persistence). The graph, its
node and its state are shown, then saved, in chapter 13.

The second graph, :func:`build_retried_graph` (``hold_seat -> charge_card``), shows what
the server does when the worker running a run goes away. ``charge_card`` calls
:func:`helpers.worker_faults.lose_this_worker` on its first ``cut_off`` starts: it cancels
the server's own task for the run, which is what a server does to its runs when it shuts
down. Every node start is one line in a log file the notebook owns
(:func:`helpers.worker_faults.note_start`), so the notebook counts what ran without a
clock. Served as ``{"retried": RETRIED_GRAPH_SPEC}``; shown, then saved, in chapter 13.

The third, :func:`build_keyed_fare_graph` (``price_with_key``, with a context schema),
shows that the server copies a run's ``context`` into every checkpoint's metadata.
Served as ``{"fare": "helpers.appendix_graphs:keyed_fare_graph"}``; shown, then saved,
in chapter 13.
"""

from __future__ import annotations

import asyncio
import operator
import time
from pathlib import Path
from typing import Annotated, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from helpers import worker_faults

# shown in solutions/13_agent_server.ipynb
GATE_FILE = "open"
# shown in solutions/13_agent_server.ipynb
POLL_SECONDS = 0.01  # how often the waiting node looks for the gate file
# shown in solutions/13_agent_server.ipynb
MAX_WAIT_SECONDS = 60.0  # a gate nobody opens must not block a server worker forever
GATED_GRAPH_SPEC = "helpers.appendix_graphs:gated_graph"
RETRIED_GRAPH_SPEC = "helpers.appendix_graphs:retried_graph"


# shown in solutions/13_agent_server.ipynb
class GatedState(TypedDict, total=False):
    """``gate``: the directory to watch; ``label``: names the run; ``done``: one line per finished run."""

    gate: str
    label: str
    done: Annotated[list[str], operator.add]


def open_gate(gate: str | Path) -> None:
    """Let every run waiting on ``gate`` (a directory) finish."""
    (Path(gate) / GATE_FILE).touch()


# shown in solutions/13_agent_server.ipynb
def gate_is_open(gate: str | Path) -> bool:
    """Has someone opened ``gate`` (a directory)?"""
    return (Path(gate) / GATE_FILE).exists()


# shown in solutions/13_agent_server.ipynb
async def wait_at_gate(state: GatedState) -> dict[str, list[str]]:
    """Wait until the gate is open (at most MAX_WAIT_SECONDS), then record this run."""
    deadline = time.monotonic() + MAX_WAIT_SECONDS
    while not gate_is_open(state["gate"]):
        if time.monotonic() > deadline:
            raise TimeoutError(f"nobody opened the gate within {MAX_WAIT_SECONDS:g} s")
        await asyncio.sleep(POLL_SECONDS)
    return {"done": [f"{state.get('label', 'run')} finished"]}


# shown in solutions/13_agent_server.ipynb
def build_gated_graph(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    """START -> wait_at_gate -> END."""
    builder = StateGraph(GatedState)
    builder.add_node("wait_at_gate", wait_at_gate)
    builder.add_edge(START, "wait_at_gate")
    builder.add_edge("wait_at_gate", END)
    return builder.compile(checkpointer=checkpointer)


gated_graph = build_gated_graph()


# -- a run whose worker goes away (chapter 13) ------------------------------------------


# shown in solutions/13_agent_server.ipynb
class BookingState(TypedDict, total=False):
    """``log``: the file node starts are noted in; ``cut_off``: how many starts of charge_card lose their worker."""

    log: str
    cut_off: int
    done: Annotated[list[str], operator.add]


# shown in solutions/13_agent_server.ipynb
def hold_seat(state: BookingState) -> dict[str, list[str]]:
    """Hold the seat (a stand-in): note the start, record the step."""
    worker_faults.note_start(state["log"], "hold_seat")
    return {"done": ["hold_seat"]}


# shown in solutions/13_agent_server.ipynb
async def charge_card(state: BookingState, config: RunnableConfig) -> dict[str, list[str]]:
    """Charge the card (a stand-in). On its first ``cut_off`` starts, the worker running it goes away."""
    starts = await asyncio.to_thread(worker_faults.note_start, state["log"], "charge_card")
    if starts <= state.get("cut_off", 0):
        await worker_faults.lose_this_worker(config)
    return {"done": ["charge_card"]}


# shown in solutions/13_agent_server.ipynb
def build_retried_graph(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    """START -> hold_seat -> charge_card -> END."""
    builder = StateGraph(BookingState)
    builder.add_node("hold_seat", hold_seat)
    builder.add_node("charge_card", charge_card)
    builder.add_edge(START, "hold_seat")
    builder.add_edge("hold_seat", "charge_card")
    builder.add_edge("charge_card", END)
    return builder.compile(checkpointer=checkpointer)


retried_graph = build_retried_graph()


# -- runtime context on the server (chapter 13) ------------------------------------------

# shown in solutions/13_agent_server.ipynb
class FareState(TypedDict, total=False):
    """``request``: the trip asked for; ``quote``: the fare found."""

    request: str
    quote: str


# shown in solutions/13_agent_server.ipynb
class FareContext(TypedDict, total=False):
    """Per-run values that are not state: here the fare provider's API key."""

    api_key: str


# shown in solutions/13_agent_server.ipynb
def price_with_key(state: FareState, runtime: Runtime[FareContext]) -> dict[str, str]:
    """Look the fare up with the key from the run's context (a stand-in: the key is only checked)."""
    has_key = bool((runtime.context or {}).get("api_key"))
    return {"quote": f"{state['request']}: Air B, 540 EUR" if has_key else "no API key"}


# shown in solutions/13_agent_server.ipynb
def build_keyed_fare_graph(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    """START -> price_with_key -> END, with a context schema."""
    builder = StateGraph(FareState, context_schema=FareContext)
    builder.add_node("price_with_key", price_with_key)
    builder.add_edge(START, "price_with_key")
    builder.add_edge("price_with_key", END)
    return builder.compile(checkpointer=checkpointer)


keyed_fare_graph = build_keyed_fare_graph()
