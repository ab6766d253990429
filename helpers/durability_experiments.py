"""Experiments for chapter 08: what each durability mode saves, keeps after a crash, and costs.

Three pieces, each usable on its own:

- :func:`linear_graph` builds the chapter's small graph: nodes in a line (``a → b → c``),
  each appending its name to a ``trip`` list. A node can raise (``fail_at``), pause with
  ``interrupt()`` (``interrupt_at``) or kill its whole process with ``os._exit(17)``
  (``crash_at``): a real crash, no ``finally``, no atexit, no flush of anything.
  :func:`count_saves` runs it once on a :class:`~helpers.counting_saver.CountingSaver` and
  reports what reached the saver.
- :func:`crash_experiment` starts one child process per durability mode, in parallel. Each
  child runs ``a → b → c → d`` on a SQLite file through a saver with a write latency (like a
  remote database) and node ``c`` kills it. This process then opens each file and reports
  what survived (:func:`inspect_file`) and what a resume runs (:func:`resume_file`).
  :func:`survival_rows` turns that into rows that hold on every run: exact values where the
  outcome is deterministic, robust properties where it depends on a race.
- :func:`measure_costs` times ``invoke`` per mode on a SQLite file (interleaved rounds after
  a warm-up) and :func:`summarize_costs` gives medians and ratios to ``sync``.

Every file goes into a temporary directory that is removed afterwards.
"""

from __future__ import annotations

import inspect
import operator
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from pathlib import Path
from typing import Annotated, Any, Iterable, Sequence, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from .counting_saver import CountingSaver

MODES = ("sync", "async", "exit")
CRASH_EXIT_CODE = 17
CRASH_NODES = ("a", "b", "c", "d")
CRASH_AT = "c"
THREAD = {"configurable": {"thread_id": "trip-1"}}


class Trip(TypedDict):
    trip: Annotated[list[str], operator.add]


def _append_line(path: str | Path, text: str) -> None:
    # open/write/close: once close() returns, the line is in the OS, so it survives os._exit.
    with open(path, "a", encoding="utf-8") as log:
        log.write(text + "\n")


def make_node(name: str, *, calls: list[str] | None = None, log_path: str | Path | None = None,
              fail: bool = False, pause: bool = False, crash: bool = False, work_seconds: float = 0.0):
    """A node that records its call, then (optionally) raises, pauses or kills the process.

    ``work_seconds`` stands in for real work (a model or API call) with a sleep.
    """

    def node(state: Trip) -> dict[str, list[str]]:
        if work_seconds:
            time.sleep(work_seconds)  # simulated latency of real work, not synchronisation
        if calls is not None:
            calls.append(name)
        if log_path is not None:
            _append_line(log_path, name)
        if crash:
            os._exit(CRASH_EXIT_CODE)  # a real crash: the process ends here, nothing is cleaned up
        if fail:
            raise RuntimeError(f"{name} failed")
        if pause:
            interrupt(f"approve {name}?")
        return {"trip": [name]}

    node.__name__ = name
    return node


def node_source() -> str:
    """The source of the node function that :func:`make_node` returns, dedented (for display)."""
    source = inspect.getsource(make_node)
    body = source[source.index("    def node("):source.index("    node.__name__")]
    return textwrap.dedent(body).strip()


def linear_graph(checkpointer: Any, nodes: Sequence[str] = ("a", "b", "c"), *, calls: list[str] | None = None,
                 log_path: str | Path | None = None, fail_at: str | None = None,
                 interrupt_at: str | None = None, crash_at: str | None = None, work_seconds: float = 0.0):
    """Compile START → nodes[0] → … → nodes[-1] → END on ``checkpointer``.

    ``calls`` (a list) and/or ``log_path`` (a file, one name per line) record every node call.
    """
    builder = StateGraph(Trip)
    for name in nodes:
        builder.add_node(name, make_node(name, calls=calls, log_path=log_path, fail=name == fail_at,
                                         pause=name == interrupt_at, crash=name == crash_at,
                                         work_seconds=work_seconds))
    for left, right in zip([START, *nodes], [*nodes, END]):
        builder.add_edge(left, right)
    return builder.compile(checkpointer=checkpointer)


def count_saves(durability: str | None, *, fail_at: str | None = None, interrupt_at: str | None = None,
                nodes: Sequence[str] = ("a", "b", "c")) -> dict[str, Any]:
    """Run the linear graph once on a counting in-memory saver; report what was saved.

    ``durability=None`` passes no mode (the default). A node failure is caught and named in
    ``outcome``. Returns put / put_writes calls, checkpoints in history, and the pending
    writes (channel names, sorted) stored with the latest checkpoint.
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


# -- real crashes ---------------------------------------------------------------------------

CHILD_CODE = """
import sys
from helpers.durability_experiments import crash_workers
crash_workers(sys.argv[1], sys.argv[2].split(","), float(sys.argv[3]), sys.argv[4].split(","), sys.argv[5])
"""


def open_sqlite_saver(db_path: str | Path) -> SqliteSaver:
    """A SqliteSaver on a file (check_same_thread=False: the saver writes from a worker thread)."""
    return SqliteSaver(sqlite3.connect(str(db_path), check_same_thread=False))


def crash_run(db_path: str | Path, durability: str, log_path: str | Path, delay: float,
              nodes: Sequence[str] = CRASH_NODES, crash_at: str = CRASH_AT) -> None:
    """Worker side: run a → b → c → d on the file; node c kills the process (exit code 17)."""
    saver = CountingSaver(open_sqlite_saver(db_path), delay=delay)
    graph = linear_graph(saver, nodes, log_path=log_path, crash_at=crash_at)
    graph.invoke({"trip": []}, THREAD, durability=durability)
    print("unreachable: node c should have ended this process", file=sys.stderr)
    os._exit(1)


def crash_workers(workdir: str | Path, modes: Sequence[str], delay: float,
                  nodes: Sequence[str] = CRASH_NODES, crash_at: str = CRASH_AT) -> None:
    """Child side: run one crashing worker process per mode, in parallel; print their exit codes.

    This child imports LangGraph once. With ``os.fork`` (Linux, macOS) each worker is a fork
    of it, started right after the import (no threads exist yet, so forking is safe) and
    sharing nothing with its siblings but the modules already loaded; every worker opens its
    own SQLite file. Without ``fork`` each worker is a fresh interpreter instead (slower).
    The exit codes go to stdout as ``mode=code`` lines.
    """
    workdir = Path(workdir)
    paths = {mode: (workdir / f"{mode}.sqlite", workdir / f"{mode}.log") for mode in modes}
    if hasattr(os, "fork"):
        pids = {}
        for mode in modes:
            pid = os.fork()
            if pid == 0:  # the worker
                try:
                    crash_run(paths[mode][0], mode, paths[mode][1], delay, nodes, crash_at)
                except BaseException:
                    traceback.print_exc()
                os._exit(1)  # only reached if crash_run did not crash
            pids[mode] = pid
        codes = {mode: os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for mode, pid in pids.items()}
    else:  # pragma: no cover - platforms without fork
        code = "import sys\nfrom helpers.durability_experiments import crash_run\n" \
               "crash_run(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5].split(','), sys.argv[6])"
        workers = {mode: subprocess.Popen([sys.executable, "-c", code, str(paths[mode][0]), mode, str(paths[mode][1]),
                                           str(delay), ",".join(nodes), crash_at]) for mode in modes}
        codes = {mode: worker.wait() for mode, worker in workers.items()}
    for mode in modes:
        print(f"{mode}={codes[mode]}", flush=True)


def run_crash_workers(workdir: str | Path, modes: Sequence[str] = MODES, delay: float = 0.02, timeout: float = 60,
                      nodes: Sequence[str] = CRASH_NODES, crash_at: str = CRASH_AT) -> dict[str, int]:
    """Start the child (see :func:`crash_workers`) and wait; return each worker's exit code."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    done = subprocess.run([sys.executable, "-c", CHILD_CODE, str(workdir), ",".join(modes), str(delay),
                           ",".join(nodes), crash_at],
                          env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-10:])
        raise RuntimeError(f"the crash child exited with {done.returncode}:\n{tail}")
    codes = dict(line.split("=", 1) for line in done.stdout.split())
    return {mode: int(codes[mode]) for mode in modes}


def inspect_file(db_path: str | Path) -> dict[str, Any]:
    """Open a checkpoint file from this process: the steps saved and the latest pending writes."""
    saver = open_sqlite_saver(db_path)
    try:
        tuples = list(saver.list(THREAD))
        latest = saver.get_tuple(THREAD)
        return {
            "steps": sorted(t.metadata["step"] for t in tuples),
            "pending writes": len(latest.pending_writes) if latest else 0,
        }
    finally:
        saver.conn.close()


def resume_file(db_path: str | Path, nodes: Sequence[str] = CRASH_NODES) -> dict[str, Any]:
    """``invoke(None, config)`` on the file, no crash this time: which nodes run, or which error."""
    saver = open_sqlite_saver(db_path)
    calls: list[str] = []
    try:
        graph = linear_graph(saver, nodes, calls=calls)
        try:
            result = graph.invoke(None, THREAD)
            return {"ran": tuple(calls), "error": None, "trip": tuple(result["trip"])}
        except Exception as exc:  # EmptyInputError when nothing at all was saved
            return {"ran": tuple(calls), "error": f"{type(exc).__name__}: {str(exc).splitlines()[0]}", "trip": ()}
    finally:
        saver.conn.close()


def read_log(path: str | Path) -> tuple[str, ...]:
    path = Path(path)
    return tuple(path.read_text(encoding="utf-8").split()) if path.exists() else ()


def crash_experiment(modes: Sequence[str] = MODES, delay: float = 0.02, timeout: float = 60,
                     nodes: Sequence[str] = CRASH_NODES, crash_at: str = CRASH_AT) -> dict[str, dict[str, Any]]:
    """Crash one worker process per mode (in parallel), then inspect and resume each file from here.

    Returns, per mode: the worker's exit code, the nodes it ran before dying (its log file),
    what is on disk, and what a resume does. The temporary directory is removed.
    """
    modes = list(modes)
    with tempfile.TemporaryDirectory(prefix="ch08-crash-") as workdir:
        codes = run_crash_workers(workdir, modes, delay, timeout, nodes, crash_at)
        results = {}
        for mode in modes:
            if codes[mode] != CRASH_EXIT_CODE:
                raise RuntimeError(f"the {mode} worker exited with {codes[mode]}, expected {CRASH_EXIT_CODE}")
            db = Path(workdir) / f"{mode}.sqlite"
            results[mode] = {"nodes": tuple(nodes), "crash at": crash_at, "exit code": codes[mode],
                             "ran before crash": read_log(Path(workdir) / f"{mode}.log"),
                             **inspect_file(db), "resume": resume_file(db, nodes)}
        return results


def survival_facts(result: dict[str, Any]) -> dict[str, bool]:
    """Properties of one crash result that do not depend on timing.

    With the crash in node number k (c is number 2 in a → b → c → d), the checkpoint of
    step k is the one written after every node before the crash had finished.

    - ``kept finished steps``: that checkpoint is on disk, so no finished node has to repeat;
    - ``repeats finished work``: a resume runs a finished node again, or cannot start at all;
    - ``needs the input again``: nothing was saved, so resume raises and the input must be resent.
    """
    k = list(result["nodes"]).index(result["crash at"])
    finished = set(result["nodes"][:k])
    resume = result["resume"]
    return {
        "kept finished steps": k in result["steps"],
        "repeats finished work": bool(resume["error"]) or bool(finished & set(resume["ran"])),
        "needs the input again": not result["steps"] and bool(resume["error"]),
    }


SURVIVAL_COLUMNS = ("mode", "ran before crash", "exit code", "steps on disk", "latest step", "pending writes",
                    "on resume")


def survival_rows(results: dict[str, dict[str, Any]], exact: Iterable[str] = ("sync", "exit")) -> list[dict[str, Any]]:
    """One row per mode, made to print the same on every run.

    Modes in ``exact`` have deterministic outcomes (sync waits for every save; exit saves
    nothing before the end), so their rows show the raw values. Any other mode (async: its
    saves race the next steps on a background thread) shows only bounds that hold whatever
    the timing: fewer steps than sync, the latest one before the crash step, work repeated.
    A bound that does not hold is shown with a "?" so that the difference is visible.
    """
    exact = set(exact)
    rows = []
    for mode, res in results.items():
        facts = survival_facts(res)
        resume = res["resume"]
        k = list(res["nodes"]).index(res["crash at"])
        if mode in exact:
            steps = ",".join(map(str, res["steps"])) or "none"
            latest = res["steps"][-1] if res["steps"] else "none"
            pending = res["pending writes"]
            on_resume = resume["error"].split(":")[0] if resume["error"] else "runs " + ",".join(resume["ran"])
        else:
            kept = facts["kept finished steps"]
            steps = "fewer than sync" if not kept else f"?{res['steps']}"
            latest = f"before {k}" if not kept else f"?{res['steps'][-1]}"
            pending = "varies"
            on_resume = "repeats finished work" if facts["repeats finished work"] else f"?runs {','.join(resume['ran'])}"
        rows.append({"mode": mode, "ran before crash": ",".join(res["ran before crash"]), "exit code": res["exit code"],
                     "steps on disk": steps, "latest step": latest, "pending writes": pending, "on resume": on_resume})
    return rows


# -- cost -----------------------------------------------------------------------------------

def measure_costs(modes: Sequence[str] = MODES, runs: int = 30, warmup: int = 3, nodes: Sequence[str] = ("a", "b", "c"),
                  work_seconds: float = 0.0, write_delay: float = 0.0) -> dict[str, list[float]]:
    """Milliseconds per ``invoke`` for each mode on one SQLite file.

    ``work_seconds`` makes every node take that long (a stand-in for a model call) and
    ``write_delay`` adds that latency to every put / put_writes (a remote database).

    Rounds are interleaved (sync, async, exit, sync, …) so that background noise hits every
    mode alike; each invoke uses a new thread id, so every run starts from an empty thread.
    The first ``warmup`` rounds are not recorded. The file is removed afterwards.
    """
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    with tempfile.TemporaryDirectory(prefix="ch08-cost-") as workdir:
        sqlite_saver = open_sqlite_saver(Path(workdir) / "cost.sqlite")
        saver = CountingSaver(sqlite_saver, delay=write_delay) if write_delay else sqlite_saver
        try:
            graph = linear_graph(saver, nodes, work_seconds=work_seconds)
            for round_no in range(warmup + runs):
                for mode in modes:
                    config = {"configurable": {"thread_id": f"{mode}-{round_no}"}}
                    started = time.perf_counter()
                    graph.invoke({"trip": []}, config, durability=mode)
                    elapsed = (time.perf_counter() - started) * 1000
                    if round_no >= warmup:
                        samples[mode].append(elapsed)
        finally:
            sqlite_saver.conn.close()
    return samples


def summarize_costs(samples: dict[str, Sequence[float]], reference: str = "sync") -> list[dict[str, Any]]:
    """Per mode: number of runs, median ms per invoke, and the median's ratio to ``reference``."""
    medians = {mode: statistics.median(values) for mode, values in samples.items()}
    return [{"mode": mode, "runs": len(samples[mode]), "median ms": round(medians[mode], 2),
             f"ratio to {reference}": round(medians[mode] / medians[reference], 2)} for mode in samples]
