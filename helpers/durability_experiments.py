"""Chapter 08's graph and the experiments around it: what each durability mode saves and keeps
after a real crash.

- :class:`TripLog`, :data:`CRASH_EXIT_CODE`, :func:`make_node` and :func:`linear_graph` are the
  chapter's graph. Chapter 08 shows them in its cells (``# saved as ...``); the definitions
  here must stay identical to those cells. Nodes in a line, each appending its name to
  ``trip``; a node can raise, pause with ``interrupt()``, or kill its whole process with
  ``os._exit(17)``: a real crash, no ``finally``, no atexit, no flush of anything.
- :func:`count_saves` runs the graph once on a
  :class:`~helpers.counting_saver.CountingSaver` and reports what reached the saver.
- :class:`CrashLab` (or :func:`crash_experiment` for one experiment) runs :class:`CrashRun`
  workers in parallel, each a real OS process whose node ``c`` kills it while it runs
  ``a → b → c → d`` on its own SQLite file. Another process then opens each file, reports
  what survived and recovers the run (:class:`CrashResult`). All of them are forked from
  one :class:`helpers.preloaded_processes.ProcessServer` that imported LangGraph once. :func:`survival_rows` and
  :func:`outcome_rows` turn results into tables; :func:`survival_facts` and
  :func:`recovery_laws` give the properties that hold whatever the timing.
- What each mode costs is measured by :mod:`helpers.durability_costs`.

Files go into a directory the caller owns (the chapter's ``TemporaryDirectory``).
"""

from __future__ import annotations

import json
import operator
import os
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.errors import EmptyInputError
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from . import preloaded_processes
from .counting_saver import CountingSaver

MODES = ("sync", "async", "exit")
CRASH_NODES = ("a", "b", "c", "d")
CRASH_AT = "c"
THREAD = {"configurable": {"thread_id": "trip-1"}}


# -- the chapter's graph (shown in chapter 08; keep identical to its cells) -----------------

# shown in solutions/08_durability.ipynb
class TripLog(TypedDict):
    trip: Annotated[list[str], operator.add]  # every node appends its name


# shown in solutions/08_durability.ipynb
CRASH_EXIT_CODE = 17


# shown in solutions/08_durability.ipynb
def make_node(name: str, *, log_path: str | None = None, fail: bool = False, pause: bool = False,
              crash: bool = False, work_seconds: float = 0.0) -> Callable[[TripLog, Runtime], dict[str, list[str]]]:
    """A node that appends ``name`` to the trip. Before that it can log its call, then fail, pause or crash."""

    def node(state: TripLog, runtime: Runtime) -> dict[str, list[str]]:
        if work_seconds:
            time.sleep(work_seconds)  # stands in for real work (a model call), not for synchronisation
        if log_path is not None:  # a file outlives the process: one line per call, the node and its task id
            with open(log_path, "a", encoding="utf-8") as log:
                log.write(f"{name} {runtime.execution_info.task_id}\n")
        if crash:
            os._exit(CRASH_EXIT_CODE)  # a real crash: the process ends here, nothing is cleaned up
        if fail:
            raise RuntimeError(f"{name} failed")
        if pause:
            interrupt(f"approve {name}?")
        return {"trip": [name]}

    return node


# shown in solutions/08_durability.ipynb
def linear_graph(checkpointer: BaseCheckpointSaver | None, nodes: Sequence[str] = ("a", "b", "c"), *,
                 log_path: str | None = None, fail_at: str | None = None, interrupt_at: str | None = None,
                 crash_at: str | None = None, work_seconds: float = 0.0,
                 slow_at: str | None = None) -> CompiledStateGraph:
    """START → nodes[0] → … → nodes[-1] → END, compiled on ``checkpointer``.

    Every node works ``work_seconds`` first, or only node ``slow_at`` when one is named.
    """
    builder = StateGraph(TripLog)
    for name in nodes:
        work = work_seconds if slow_at in (None, name) else 0.0
        builder.add_node(name, make_node(name, log_path=log_path, fail=name == fail_at, pause=name == interrupt_at,
                                         crash=name == crash_at, work_seconds=work))
    for left, right in zip([START, *nodes], [*nodes, END], strict=True):
        builder.add_edge(left, right)
    return builder.compile(checkpointer=checkpointer)


# -- counting what each mode saves ------------------------------------------------------------

def count_saves(durability: str | None, *, fail_at: str | None = None, interrupt_at: str | None = None,
                nodes: Sequence[str] = ("a", "b", "c")) -> dict[str, Any]:
    """Run the linear graph once on a counting in-memory saver; report what was saved.

    ``durability=None`` passes no mode (the default). A node failure is caught and named in
    ``outcome``. Returns put / put_writes calls, checkpoints in history, the latest step,
    and the pending writes (channel names, sorted) stored with the latest checkpoint.
    """
    saver = CountingSaver(InMemorySaver())
    graph = linear_graph(saver, nodes, fail_at=fail_at, interrupt_at=interrupt_at)
    kwargs = {} if durability is None else {"durability": durability}
    try:
        result = graph.invoke({"trip": []}, THREAD, **kwargs)
        outcome = "paused" if "__interrupt__" in result else "done"
    except Exception as exc:  # the lesson: what is saved when a node fails
        outcome = type(exc).__name__
    calls = saver.counts()
    latest = saver.inner.get_tuple(THREAD)
    return {
        "mode": durability if durability is not None else "(default)",
        "outcome": outcome,
        "put": calls["put"],
        "put_writes": calls["put_writes"],
        "checkpoints": sum(1 for _ in graph.get_state_history(THREAD)),
        "latest step": latest.metadata["step"] if latest else None,
        "pending writes": tuple(sorted(w[1] for w in latest.pending_writes)) if latest else (),
    }


# -- real crashes -----------------------------------------------------------------------------

@dataclass(frozen=True)
class CrashRun:
    """One worker process: run ``nodes`` with ``durability=mode``; node ``crash_at`` kills it.

    ``delay`` adds that many seconds to every ``put`` / ``put_writes`` (a remote database);
    ``work_seconds`` makes every node, or only ``slow_at``, sleep that long first (slow work, like a model call).
    ``label`` names the run in tables; it must be unique within one experiment.
    """

    label: str
    mode: str
    delay: float = 0.0
    nodes: tuple[str, ...] = CRASH_NODES
    work_seconds: float = 0.0
    slow_at: str | None = None
    crash_at: str = CRASH_AT


@dataclass(frozen=True)
class CrashResult:
    """What one crashed worker left behind, and what recovering its file did."""

    run: CrashRun
    exit_code: int
    ran_before_crash: tuple[str, ...]  # from the worker's log file
    steps: tuple[int, ...]  # checkpoint steps on disk, oldest first
    pending_writes: int  # stored with the latest checkpoint
    recovery_error: str | None  # what invoke(None, config) raised, if it did (then the input was sent again)
    recovery_ran: tuple[str, ...]  # the nodes the recovery ran, in order
    trip: tuple[str, ...]  # the trip after recovery
    task_id_kept: bool  # the crashed node ran again on recovery under the task id it had before

    @property
    def finished_before_crash(self) -> tuple[str, ...]:
        return self.run.nodes[:self.run.nodes.index(self.run.crash_at)]

    @property
    def step_before_crash(self) -> int:
        """The step of the checkpoint the crashing node was planned from (c is number 2 in a → b → c → d)."""
        return self.run.nodes.index(self.run.crash_at)


# SQLite's flush level for the crash lab's files (``PRAGMA synchronous``): see open_sqlite_saver.
CRASH_SYNCHRONOUS = "OFF"


def open_sqlite_saver(db_path: str | Path, *, synchronous: str | None = None) -> SqliteSaver:
    """A SqliteSaver on a file (check_same_thread=False: the saver writes from a worker thread).

    ``synchronous`` sets SQLite's ``PRAGMA synchronous`` on the connection; None keeps
    SQLite's default (the cost measurement, :mod:`helpers.durability_costs`, times the saver
    as it ships). The crash lab passes :data:`CRASH_SYNCHRONOUS` (``"OFF"``): a commit
    returns once the operating system has the data, without waiting for the disk. That keeps
    every write a *process* crash could lose or keep exactly as it is (the operating system
    still has it after ``os._exit``; only an operating-system crash or a power cut could lose
    it), as chapter 06's crashes do, and saves a disk flush per commit and per close. It also
    makes each commit faster, which moves the ``"async"`` race (chapter 08 says so).
    """
    conn = sqlite3.connect(str(db_path), check_same_thread=False)
    if synchronous is not None:
        conn.execute(f"PRAGMA synchronous={synchronous}")
    return SqliteSaver(conn)


def worker_files(folder: str | Path, number: int) -> tuple[Path, Path, Path, Path]:
    """Worker ``number``'s checkpoint file, its node log, the node log of its recovery, and its result."""
    base = Path(folder) / f"worker-{number}"
    return (base.with_suffix(".sqlite"), base.with_suffix(".log"), base.with_suffix(".recovery.log"),
            base.with_suffix(".json"))


def crash_run(folder: str | Path, number: int, run: CrashRun) -> None:
    """Worker side: run the line on the worker's own file until ``run.crash_at`` kills the process."""
    db, log, _, _ = worker_files(folder, number)
    saver = CountingSaver(open_sqlite_saver(db, synchronous=CRASH_SYNCHRONOUS), delay=run.delay)
    graph = linear_graph(saver, run.nodes, log_path=str(log), crash_at=run.crash_at,
                         work_seconds=run.work_seconds, slow_at=run.slow_at)
    graph.invoke({"trip": []}, THREAD, durability=run.mode)
    print(f"unreachable: node {run.crash_at} should have ended this process", file=sys.stderr)
    os._exit(1)


def read_log(path: str | Path) -> list[tuple[str, str]]:
    """``(node, task id)`` per line of a node log; empty if the file does not exist."""
    path = Path(path)
    if not path.exists():
        return []
    return [(line.split()[0], line.split()[1]) for line in path.read_text(encoding="utf-8").splitlines() if line]


def inspect_file(db_path: str | Path) -> tuple[tuple[int, ...], int]:
    """Open a checkpoint file: the steps saved, and the latest checkpoint's pending writes."""
    saver = open_sqlite_saver(db_path, synchronous=CRASH_SYNCHRONOUS)
    try:
        steps = tuple(sorted(t.metadata["step"] for t in saver.list(THREAD)))
        latest = saver.get_tuple(THREAD)
        return steps, len(latest.pending_writes) if latest else 0
    finally:
        saver.conn.close()


def recover_file(db_path: str | Path, log_path: str | Path,
                 nodes: Sequence[str] = CRASH_NODES) -> tuple[str | None, tuple[str, ...]]:
    """Recover a crashed run: ``invoke(None, config)``; if nothing was saved, send the input again.

    Returns the error the resume raised (None if it worked) and the trip at the end. The
    nodes that ran are logged to ``log_path``.
    """
    saver = open_sqlite_saver(db_path, synchronous=CRASH_SYNCHRONOUS)
    try:
        graph = linear_graph(saver, nodes, log_path=str(log_path))
        try:
            result = graph.invoke(None, THREAD)
            error = None
        except EmptyInputError as exc:  # nothing at all was saved: the request has to be sent again
            error = f"{type(exc).__name__}: {exc}"
            result = graph.invoke({"trip": []}, THREAD)
        return error, tuple(result["trip"])
    finally:
        saver.conn.close()


def examine(folder: str | Path, number: int, run: CrashRun, exit_code: int) -> CrashResult:
    """After worker ``number`` died: read its log and file, recover the run, compare the task ids."""
    db, log, recovery_log, _ = worker_files(folder, number)
    before = read_log(log)
    steps, pending = inspect_file(db)
    error, trip = recover_file(db, recovery_log, run.nodes)
    after = read_log(recovery_log)
    crashed_task, recovered_task = dict(before).get(run.crash_at), dict(after).get(run.crash_at)
    return CrashResult(run=run, exit_code=exit_code, ran_before_crash=tuple(n for n, _ in before), steps=steps,
                       pending_writes=pending, recovery_error=error, recovery_ran=tuple(n for n, _ in after),
                       trip=trip, task_id_kept=crashed_task is not None and crashed_task == recovered_task)


def _crash_worker(folder: str, number: int, spec: dict[str, Any]) -> None:
    """A worker child: :func:`crash_run` for the run described by ``spec`` (a CrashRun as a dict)."""
    crash_run(folder, number, CrashRun(**{**spec, "nodes": tuple(spec["nodes"])}))


def _examine_worker(folder: str, number: int, spec: dict[str, Any], exit_code: int) -> None:
    """An examining child: write worker ``number``'s result file (what :func:`examine` found if it crashed)."""
    run = CrashRun(**{**spec, "nodes": tuple(spec["nodes"])})
    found = asdict(examine(folder, number, run, exit_code)) if exit_code == CRASH_EXIT_CODE else {}
    worker_files(folder, number)[3].write_text(json.dumps({"exit_code": exit_code, **found}), encoding="utf-8")


def _examine_workers(folder: str, specs: Sequence[dict[str, Any]], exit_codes: Sequence[int]) -> None:
    """One examining child for a whole experiment: :func:`_examine_worker` for each worker, in turn.

    One process rather than one per worker: the files are read after every worker has died,
    so reading them one after the other changes no result, and the examination needs the
    memory of one process instead of one per worker.
    """
    for number, (spec, code) in enumerate(zip(specs, exit_codes, strict=True)):
        _examine_worker(folder, number, spec, code)


class CrashLab:
    """Crash workers on request, each a real process forked from a server that imported LangGraph once.

    Made early (chapter 08's setup cell), the server's import overlaps with the chapter, so
    the crash experiment itself takes about a second. :meth:`run` runs one experiment in a
    new folder inside ``workdir``: the workers in parallel (at most ``max_parallel`` at once,
    which bounds the memory), each forked from the server
    (:class:`helpers.preloaded_processes.ProcessServer`), and when all have died, one more
    child opens each worker's file in turn, recovers the run and writes what it found; so
    every file is read by a process that did not write it. The children's output (a traceback, if
    any) goes to :attr:`log_path`. :meth:`close` (or leaving a ``with`` block) ends the
    server; if the notebook's kernel dies first, the server ends by itself.
    """

    def __init__(self, workdir: str | Path, *, max_parallel: int = 4) -> None:
        if max_parallel < 1:
            raise ValueError("max_parallel must be at least 1")
        self.workdir, self.max_parallel = Path(workdir), max_parallel
        self.log_path = self.workdir / "crash-lab.log"
        self.server = preloaded_processes.ProcessServer([__name__], log=self.log_path)
        self.experiments = 0

    def run(self, runs: Sequence[CrashRun], timeout: float = 120) -> list[CrashResult]:
        """Crash every run's worker (all in parallel) and examine what each left behind.

        Raises RuntimeError if an examination fails or a worker did not end with :data:`CRASH_EXIT_CODE`.
        """
        labels = [run.label for run in runs]
        if len(set(labels)) != len(labels):
            raise ValueError(f"labels must be unique: {labels}")
        if not self.server.is_open:
            raise RuntimeError("this crash lab is closed; make a new one")
        self.experiments += 1
        folder = tempfile.mkdtemp(prefix=f"crash-{self.experiments}-", dir=self.workdir)
        specs = [asdict(run) for run in runs]
        log, server = self.log_path, self.server
        # Slow workers (a slow node or saver) start first, so their sleeping overlaps the quick
        # ones; at most max_parallel live at once, which bounds the memory of the experiment.
        first = sorted(range(len(runs)), key=lambda n: -(runs[n].work_seconds + runs[n].delay))
        started: dict[int, preloaded_processes.Child] = {}
        running: list[preloaded_processes.Child] = []
        for n in first:
            if len(running) == self.max_parallel:
                running.remove(server.wait_any(running, timeout))
            started[n] = server.start(_crash_worker, folder, n, specs[n], log=log)
            running.append(started[n])
        codes = server.wait([started[n] for n in range(len(runs))], timeout)
        examined = server.run(_examine_workers, folder, specs, codes, log=log, timeout=timeout)
        if examined:
            tail = "\n".join(self.log_path.read_text(encoding="utf-8").strip().splitlines()[-10:])
            raise RuntimeError(f"examining the crashed workers failed (exit code {examined}):\n{tail}")
        results = []
        for number, run in enumerate(runs):
            found = json.loads(worker_files(folder, number)[3].read_text(encoding="utf-8"))
            if found["exit_code"] != CRASH_EXIT_CODE:
                raise RuntimeError(f"the {run.label} worker exited with {found['exit_code']}, "
                                   f"expected {CRASH_EXIT_CODE}")
            tuples = {key: tuple(found[key]) for key in ("ran_before_crash", "steps", "recovery_ran", "trip")}
            results.append(CrashResult(**{**found, **tuples, "run": run}))
        return results

    def close(self) -> int:
        """End the lab's server; its exit code (0 when all went well)."""
        return self.server.close()

    def __enter__(self) -> CrashLab:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def crash_experiment(workdir: str | Path, runs: Sequence[CrashRun], timeout: float = 120) -> list[CrashResult]:
    """One experiment in a lab of its own (see :class:`CrashLab`); the lab is closed afterwards."""
    with CrashLab(workdir) as lab:
        return lab.run(runs, timeout)


def survival_facts(result: CrashResult) -> dict[str, bool]:
    """Properties of one crash result that do not depend on timing.

    - ``kept finished steps``: the checkpoint written after the last node before the crash
      finished is on disk, so no finished node has to repeat;
    - ``repeats finished work``: the recovery ran a node that had finished before the crash;
    - ``needs the input again``: nothing was saved, so the resume raised and the input was sent again.
    """
    return {
        "kept finished steps": result.step_before_crash in result.steps,
        "repeats finished work": bool(set(result.finished_before_crash) & set(result.recovery_ran)),
        "needs the input again": result.recovery_error is not None,
    }


SURVIVAL_COLUMNS = ("mode", "ran before crash", "exit code", "steps on disk", "recovery runs", "crashed node's task id")


def _recovery_text(result: CrashResult) -> str:
    ran = ",".join(result.recovery_ran)
    if result.recovery_error:
        return f"{result.recovery_error.split(':')[0]}; input sent again: {ran}"
    return ran


def survival_rows(results: Iterable[CrashResult], exact: Iterable[str] = ("sync", "exit")) -> list[dict[str, Any]]:
    """One row per result, made to print the same on every run.

    Modes in ``exact`` have deterministic outcomes (sync waits for every checkpoint; exit
    saves nothing before the end), so their rows show the raw values. Any other mode (async:
    its saves race the next steps on a background thread) shows only bounds that hold
    whatever the timing: fewer steps than sync, finished work repeated, a new task id. A
    bound that does not hold is shown with a "?" so that the difference is visible.
    """
    exact = set(exact)
    rows = []
    for res in results:
        facts = survival_facts(res)
        if res.run.mode in exact:
            steps = ",".join(map(str, res.steps)) or "none"
            recovery = _recovery_text(res)
            task = "same" if res.task_id_kept else "new"
        else:
            kept = facts["kept finished steps"]
            steps = f"?{','.join(map(str, res.steps))}" if kept else "fewer than sync"
            recovery = "finished work again" if facts["repeats finished work"] else f"?{_recovery_text(res)}"
            task = "?same" if res.task_id_kept else "new"
        rows.append({"mode": res.run.label, "ran before crash": ",".join(res.ran_before_crash),
                     "exit code": res.exit_code, "steps on disk": steps, "recovery runs": recovery,
                     "crashed node's task id": task})
    return rows


OUTCOME_COLUMNS = ("mode", "steps on disk", "pending writes", "recovery runs", "crashed node's task id", "runs")


def outcome_rows(results: Iterable[CrashResult]) -> list[dict[str, Any]]:
    """Results grouped by mode and outcome, with how many runs had each (for trials of a racy mode).

    Within a mode, rows go from the most kept to the least kept, so the table reads as a range.
    """
    counts = Counter((r.run.mode, ",".join(map(str, r.steps)) or "none", r.pending_writes, _recovery_text(r),
                      "same" if r.task_id_kept else "new") for r in results)
    modes = list(dict.fromkeys(r.run.mode for r in results))

    def most_kept_first(item: tuple[tuple[str, str, int, str, str], int]) -> tuple[int, int, int, str, str]:
        (mode, steps, pending, recovery, task), _ = item
        return (modes.index(mode), 0 if steps == "none" else -len(steps.split(",")), -pending, recovery, task)

    ordered = sorted(counts.items(), key=most_kept_first)
    return [dict(zip(OUTCOME_COLUMNS, (*key, n), strict=True)) for key, n in ordered]


def recovery_laws(results: Sequence[CrashResult]) -> dict[str, bool]:
    """What holds for every crashed run whatever the timing (each True when it held for all)."""
    return {
        "every worker crashed in its crash node": all(
            r.exit_code == CRASH_EXIT_CODE and r.ran_before_crash[-1:] == (r.run.crash_at,) for r in results),
        "the disk held at most what sync keeps": all(
            set(r.steps) <= set(range(-1, r.step_before_crash + 1)) for r in results),
        "the recovery ran a tail of the line, from the crash node on at least": all(
            r.recovery_ran == r.run.nodes[len(r.run.nodes) - len(r.recovery_ran):]
            and r.run.crash_at in r.recovery_ran for r in results),
        "the recovery finished the whole trip": all(r.trip == r.run.nodes for r in results),
        "the task id came back exactly when the step before the crash was on disk": all(
            r.task_id_kept == (r.step_before_crash in r.steps) for r in results),
    }
