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
  what survived and recovers the run (:class:`CrashResult`). :func:`survival_rows` and
  :func:`outcome_rows` turn results into tables; :func:`survival_facts` and
  :func:`recovery_laws` give the properties that hold whatever the timing.
- What each mode costs is measured by :mod:`helpers.durability_costs`.

Files go into a directory the caller owns (the chapter's ``TemporaryDirectory``).
"""

from __future__ import annotations

import json
import operator
import os
import queue
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Annotated, Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.errors import EmptyInputError
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from .counting_saver import CountingSaver

MODES = ("sync", "async", "exit")
CRASH_NODES = ("a", "b", "c", "d")
CRASH_AT = "c"
THREAD = {"configurable": {"thread_id": "trip-1"}}


# -- the chapter's graph (shown in chapter 08; keep identical to its cells) -----------------

class TripLog(TypedDict):
    trip: Annotated[list[str], operator.add]  # every node appends its name


CRASH_EXIT_CODE = 17


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


def linear_graph(checkpointer: BaseCheckpointSaver | None, nodes: Sequence[str] = ("a", "b", "c"), *,
                 log_path: str | None = None, fail_at: str | None = None, interrupt_at: str | None = None,
                 crash_at: str | None = None, work_seconds: float = 0.0) -> CompiledStateGraph:
    """START → nodes[0] → … → nodes[-1] → END, compiled on ``checkpointer``."""
    builder = StateGraph(TripLog)
    for name in nodes:
        builder.add_node(name, make_node(name, log_path=log_path, fail=name == fail_at, pause=name == interrupt_at,
                                         crash=name == crash_at, work_seconds=work_seconds))
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

    ``delay`` adds that many seconds to every ``put`` / ``put_writes`` (a remote database).
    ``label`` names the run in tables; it must be unique within one experiment.
    """

    label: str
    mode: str
    delay: float = 0.0
    nodes: tuple[str, ...] = CRASH_NODES
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


def open_sqlite_saver(db_path: str | Path) -> SqliteSaver:
    """A SqliteSaver on a file (check_same_thread=False: the saver writes from a worker thread)."""
    return SqliteSaver(sqlite3.connect(str(db_path), check_same_thread=False))


def worker_files(folder: str | Path, number: int) -> tuple[Path, Path, Path, Path]:
    """Worker ``number``'s checkpoint file, its node log, the node log of its recovery, and its result."""
    base = Path(folder) / f"worker-{number}"
    return (base.with_suffix(".sqlite"), base.with_suffix(".log"), base.with_suffix(".recovery.log"),
            base.with_suffix(".json"))


def crash_run(folder: str | Path, number: int, run: CrashRun) -> None:
    """Worker side: run the line on the worker's own file until ``run.crash_at`` kills the process."""
    db, log, _, _ = worker_files(folder, number)
    saver = CountingSaver(open_sqlite_saver(db), delay=run.delay)
    graph = linear_graph(saver, run.nodes, log_path=str(log), crash_at=run.crash_at)
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
    saver = open_sqlite_saver(db_path)
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
    saver = open_sqlite_saver(db_path)
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


def _report(folder: str | Path, number: int, run: CrashRun, exit_code: int) -> None:
    """Write worker ``number``'s result file: its exit code, and what examining it found if it crashed."""
    found = asdict(examine(folder, number, run, exit_code)) if exit_code == CRASH_EXIT_CODE else {}
    worker_files(folder, number)[3].write_text(json.dumps({"exit_code": exit_code, **found}), encoding="utf-8")


LAB_CODE = """
import os, sys
from helpers.durability_experiments import crash_workers
for line in sys.stdin:  # one experiment per line; the lab ends when its stdin closes
    try:
        crash_workers(*line.rstrip("\\n").split("\\t", 1))
        print("done", flush=True)
    except Exception as exc:
        print("failed", repr(exc).replace("\\n", " "), flush=True)
os._exit(0)  # nothing left to flush or clean up: skip tearing down the imported modules
"""


def crash_workers(folder: str | Path, runs_json: str) -> None:
    """Lab side: crash every worker at once, then examine each file from another process.

    The lab process imported LangGraph once, when it started. With ``os.fork`` (Linux,
    macOS) it forks one watcher per run (the lab itself never starts a thread, so forking is
    safe); each watcher forks the worker, waits for it to die, then opens the worker's file,
    recovers the run and writes the worker's result file. So the watchers work in parallel,
    and every file is read by a process that did not write it. Without ``fork`` the workers
    are fresh interpreters and the lab examines their files one after the other (slower,
    same result).
    """
    runs = [CrashRun(**{**spec, "nodes": tuple(spec["nodes"])}) for spec in json.loads(runs_json)]
    if hasattr(os, "fork"):
        watchers = []
        for number, run in enumerate(runs):
            watcher = os.fork()
            if watcher == 0:
                status = 1
                try:
                    worker = os.fork()
                    if worker == 0:
                        try:
                            crash_run(folder, number, run)
                        except BaseException:
                            traceback.print_exc()
                        os._exit(1)  # only reached if the crash did not happen
                    _report(folder, number, run, os.waitstatus_to_exitcode(os.waitpid(worker, 0)[1]))
                    status = 0
                except BaseException:
                    traceback.print_exc()
                os._exit(status)
            watchers.append(watcher)
        failed = [pid for pid in watchers if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0]
        if failed:
            raise RuntimeError(f"{len(failed)} watcher(s) failed; see the lab's log")
    else:  # pragma: no cover - platforms without fork
        code = ("import json, sys\nfrom helpers.durability_experiments import CrashRun, crash_run\n"
                "spec = json.loads(sys.argv[3])\n"
                "crash_run(sys.argv[1], int(sys.argv[2]), CrashRun(**{**spec, 'nodes': tuple(spec['nodes'])}))")
        workers = [subprocess.Popen([sys.executable, "-c", code, str(folder), str(number), json.dumps(asdict(run))])
                   for number, run in enumerate(runs)]
        for number, (run, worker) in enumerate(zip(runs, workers, strict=True)):
            _report(folder, number, run, worker.wait())


class CrashLab:
    """A child process that imports LangGraph as soon as it is made, then crashes workers on request.

    Made early (chapter 08's setup cell), its import overlaps with the chapter, so the crash
    experiment itself takes well under a second. :meth:`run` runs one experiment in a new
    folder inside ``workdir``; :meth:`close` (or leaving a ``with`` block) ends the lab. If
    the notebook's kernel dies first, the lab's stdin closes and it ends by itself.
    """

    def __init__(self, workdir: str | Path) -> None:
        self.workdir = Path(workdir)
        self.log_path = self.workdir / "crash-lab.log"
        self._log = open(self.log_path, "a", encoding="utf-8")  # the workers' tracebacks, if any
        self.process = subprocess.Popen([sys.executable, "-c", LAB_CODE], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self._log, text=True,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self._replies: queue.Queue[str] = queue.Queue()
        # the reader holds only the pipe and the queue, so a lab nobody refers to any more is
        # collected, its stdin closes, and its process ends
        threading.Thread(target=_pump_lines, args=(self.process.stdout, self._replies), daemon=True).start()
        self.experiments = 0

    def run(self, runs: Sequence[CrashRun], timeout: float = 120) -> list[CrashResult]:
        """Crash every run's worker (all in parallel) and examine what each left behind.

        Raises RuntimeError if the lab fails or a worker did not end with :data:`CRASH_EXIT_CODE`.
        """
        labels = [run.label for run in runs]
        if len(set(labels)) != len(labels):
            raise ValueError(f"labels must be unique: {labels}")
        if self.process.poll() is not None or self.process.stdin is None:
            raise RuntimeError("this crash lab is closed; make a new one")
        self.experiments += 1
        folder = Path(tempfile.mkdtemp(prefix=f"crash-{self.experiments}-", dir=self.workdir))
        self.process.stdin.write(f"{folder}\t{json.dumps([asdict(r) for r in runs])}\n")
        self.process.stdin.flush()
        try:
            reply = self._replies.get(timeout=timeout)
        except queue.Empty:
            raise RuntimeError(f"no answer from the crash lab within {timeout} s") from None
        if reply != "done":
            tail = "\n".join(self.log_path.read_text(encoding="utf-8").strip().splitlines()[-10:])
            raise RuntimeError(f"the crash lab {reply}\n{tail}")
        results = []
        for number, run in enumerate(runs):
            found = json.loads(worker_files(folder, number)[3].read_text(encoding="utf-8"))
            if found["exit_code"] != CRASH_EXIT_CODE:
                raise RuntimeError(f"the {run.label} worker exited with {found['exit_code']}, "
                                   f"expected {CRASH_EXIT_CODE}")
            tuples = {key: tuple(found[key]) for key in ("ran_before_crash", "steps", "recovery_ran", "trip")}
            results.append(CrashResult(**{**found, **tuples, "run": run}))
        return results

    def close(self, timeout: float = 10) -> int:
        """End the lab (it exits when its stdin closes) and return its exit code."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()  # only this lab's own process, by its handle
            code = self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._log.close()
        return code

    def __del__(self) -> None:
        stdin = getattr(getattr(self, "process", None), "stdin", None)
        if stdin is not None and not stdin.closed:
            stdin.close()  # a forgotten lab ends: its process sees the end of its input

    def __enter__(self) -> CrashLab:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _pump_lines(stream: IO[str] | None, replies: queue.Queue[str]) -> None:
    for line in stream or ():
        replies.put(line.strip())
    replies.put("failed the lab process ended")


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
