"""A worker that goes away in the middle of a run, on the in-memory Agent Server (chapter 13).

In a deployment, the worker running a run can go away: its process is shut down for a
release, or killed. A server that shuts down cancels the tasks of its runs. In ``langgraph
dev`` a worker is an asyncio task in the server process, named
``run-<run_id>-attempt-<n>`` by the in-memory runtime (``langgraph_runtime_inmem/queue.py``).
:func:`lose_this_worker`, called from inside a node, finds that task by the ``run_id`` the
server puts into the node's config and cancels it, which is what a shutdown does to it;
the server then puts the run back into its queue and hands it out again (the run's
``attempt`` goes up).

:func:`note_start` and :func:`node_starts` count node starts in a log file the notebook
owns, so a notebook can print what ran on every attempt without timestamps.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from langchain_core.runnables import RunnableConfig

WAIT_TO_BE_CANCELLED_SECONDS = 60.0  # a cancellation that never lands must not block a worker forever
TASK_NAME = "run-{run_id}-attempt-"  # the in-memory runtime's name for the task running a run


def note_start(log: str | Path, node: str) -> int:
    """Append ``node`` to the log file ``log``; return how many times ``node`` has started so far."""
    path = Path(log)
    with path.open("a") as file:
        file.write(node + "\n")
    return path.read_text().splitlines().count(node)


def node_starts(log: str | Path) -> dict[str, int]:
    """How many times each node started, from the log file ``note_start`` writes (sorted by node)."""
    lines = Path(log).read_text().splitlines() if Path(log).exists() else []
    return {node: lines.count(node) for node in sorted(set(lines))}


async def lose_this_worker(config: RunnableConfig) -> None:
    """Cancel the in-memory server's task that runs this run (as a shutdown does), and wait to be cancelled.

    The task is found by the name the in-memory runtime gives it, ``run-<run_id>-attempt-<n>``;
    ``run_id`` is the one the server puts into ``config["configurable"]``. Outside such a
    server there is no such task: ``LookupError``.
    """
    prefix = TASK_NAME.format(run_id=config["configurable"]["run_id"])
    worker = next((task for task in asyncio.all_tasks() if task.get_name().startswith(prefix)), None)
    if worker is None:
        raise LookupError(f"no task named {prefix}<n>: not on an in-memory Agent Server")
    worker.cancel()
    await asyncio.sleep(WAIT_TO_BE_CANCELLED_SECONDS)  # the cancellation lands here
