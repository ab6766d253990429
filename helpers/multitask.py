"""Double-texting on the Agent Server, made deterministic (chapter 13).

A *multitask strategy* decides what the server does with a new run on a thread that is
still busy with another one: ``reject`` it, ``enqueue`` it, ``interrupt`` the running
one, or ``rollback`` (cancel and delete) the running one. :func:`busy_thread_experiment`
shows one strategy end to end through langgraph-sdk, in an order fixed by the caller:

1. start the first run on a new thread with the gated graph
   (:mod:`helpers.appendix_graphs`), whose node waits for a gate file;
2. poll through the SDK until the run is ``running`` and its node has started
   (:func:`wait_until_running`);
3. send the later runs with ``multitask_strategy=...``;
4. open the gate, wait for every run, and report statuses, counts and what survived.

The report holds no ids or times, only statuses, counts and labels, so a notebook can
print it as it is. :func:`busy_thread_experiments` runs several strategies, overlapping
each experiment's wait in the server's queue with the one before.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError
from langgraph_sdk.schema import Run

from .appendix_graphs import open_gate

STRATEGIES = ("reject", "enqueue", "interrupt", "rollback")
POLL_SECONDS = 0.02
DELETED = "deleted (404)"
REFUSED = "refused (409)"
UNFINISHED = ("pending", "running")  # run statuses that a join still has to wait for


def run_status(client: SyncLangGraphClient, run: Run | None) -> str:
    """The run's status now; ``deleted (404)`` when the server no longer has it."""
    if run is None:
        return REFUSED
    try:
        return client.runs.get(run["thread_id"], run["run_id"])["status"]
    except NotFoundError:
        return DELETED


def wait_until_running(client: SyncLangGraphClient, run: Run, node: str = "wait_at_gate",
                       timeout: float = 30.0) -> None:
    """Poll until ``run`` is ``running`` and its thread's newest checkpoint has ``node`` next.

    ``running`` alone is not enough: the in-memory runtime marks a run ``running`` when its
    worker picks it up, before the graph has saved a checkpoint. Once ``node`` is next, the
    run's first checkpoints are saved and its node is about to run or running, so a run
    sent now finds it busy in the same state every time. Raises if the run ends first or
    never gets there.
    """
    deadline = time.monotonic() + timeout
    while True:
        status = run_status(client, run)
        if status == "running" and client.threads.get_state(run["thread_id"])["next"] == [node]:
            return
        if status not in UNFINISHED:
            raise RuntimeError(f"the first run ended as {status!r} before the next run was sent")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the first run was still {status} without {node!r} next after {timeout:g} s")
        time.sleep(POLL_SECONDS)


class BusyThreadExperiment:
    """One strategy, in three phases: :meth:`start`, :meth:`send_later_runs`, :meth:`finish`."""

    def __init__(self, client: SyncLangGraphClient, strategy: str, gate: str | Path, *,
                 labels: tuple[str, ...] = ("first", "second"), graph: str = "gated") -> None:
        self.client, self.strategy, self.gate, self.labels, self.graph = client, strategy, Path(gate), labels, graph
        self.thread_id: str | None = None
        self.runs: list[Run | None] = []

    def start(self) -> BusyThreadExperiment:
        """Create the thread and its first run (it may wait in the server's queue)."""
        metadata = {"demo": "multitask", "strategy": self.strategy}
        self.thread_id = self.client.threads.create(metadata=metadata)["thread_id"]
        self.runs = [self.client.runs.create(self.thread_id, self.graph,
                                             input={"gate": str(self.gate), "label": self.labels[0]})]
        return self

    def send_later_runs(self) -> None:
        """Once the first run's node has started, send the others with the strategy (refused: None)."""
        try:
            wait_until_running(self.client, self.runs[0])
            for label in self.labels[1:]:
                try:
                    self.runs.append(self.client.runs.create(
                        self.thread_id, self.graph, input={"gate": str(self.gate), "label": label},
                        multitask_strategy=self.strategy))
                except ConflictError:
                    self.runs.append(None)
        except BaseException:
            open_gate(self.gate)  # never leave a run waiting
            raise

    def finish(self) -> dict[str, Any]:
        """Open the gate, wait for every run, and report (no ids, no times)."""
        open_gate(self.gate)
        for run in self.runs:
            # Join only what may still run: the in-memory server answers a join of a run that
            # already ended (interrupted, say) only after its half-second poll.
            if run is not None and run_status(self.client, run) in UNFINISHED:
                try:
                    self.client.runs.join(self.thread_id, run["run_id"])
                except NotFoundError:
                    pass  # rolled back meanwhile: nothing left to wait for
        done = self.client.threads.get_state(self.thread_id)["values"].get("done", [])
        return {
            "strategy": self.strategy,
            "statuses": tuple(run_status(self.client, run) for run in self.runs),
            "runs listed": len(self.client.runs.list(self.thread_id)),
            "survived": tuple(line.removesuffix(" finished") for line in done),
            "checkpoints": len(self.client.threads.get_history(self.thread_id, limit=100)),
        }


def busy_thread_experiment(client: SyncLangGraphClient, strategy: str, gate: str | Path, *,
                           labels: tuple[str, ...] = ("first", "second"), graph: str = "gated") -> dict[str, Any]:
    """Run ``labels[0]`` on a new thread; while it runs, send the other labels with ``strategy``.

    ``gate`` must be a fresh, empty directory. Returns a row: ``strategy``; ``statuses``
    (one per label, in order; ``refused (409)`` when the server raised ConflictError,
    ``deleted (404)`` when the run was removed); ``runs listed`` on the thread;
    ``survived`` (the labels whose node finished, from the thread's final state);
    ``checkpoints`` in the thread's history.
    """
    experiment = BusyThreadExperiment(client, strategy, gate, labels=labels, graph=graph).start()
    experiment.send_later_runs()
    return experiment.finish()


def busy_thread_experiments(client: SyncLangGraphClient, strategies: tuple[str, ...], gate_root: str | Path, *,
                            labels: tuple[str, ...] = ("first", "second")) -> list[dict[str, Any]]:
    """:func:`busy_thread_experiment` for each strategy (gates in ``gate_root/<strategy>``), pipelined.

    The in-memory dev server runs one run at a time and polls its queue when idle. So
    the next experiment's first run is created while the current one still holds the
    worker: after the current experiment's later runs (the queue is first-in, first-out),
    before its gate opens. It then starts the moment the worker is free. Each thread's
    story, and so each row, is the same as when the experiments run one by one.
    """
    experiments = [BusyThreadExperiment(client, s, Path(gate_root) / s, labels=labels) for s in strategies]
    for experiment in experiments:
        experiment.gate.mkdir(parents=True, exist_ok=True)
    rows = []
    if experiments:
        experiments[0].start()
    for current, following in zip(experiments, [*experiments[1:], None], strict=True):
        try:
            current.send_later_runs()
            if following is not None:
                following.start()  # queued behind the current experiment's runs
        except BaseException:
            for experiment in experiments:
                open_gate(experiment.gate)
            raise
        rows.append(current.finish())
    return rows
