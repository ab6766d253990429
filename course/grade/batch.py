"""Grading a batch of files, ``jobs`` at a time, in worker processes.

This module imports nothing heavy: the process that hands files to workers never runs a
notebook, so it need not pay for nbformat and nbclient. :func:`grade_file` (in
:mod:`course.grade.submission`) is imported where a file is graded.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from .kernels import scratch_folder
from .results import DEFAULT_TIMEOUT, Graded

WORKER_STEP = "grading it in a worker process"


def expand(args: Sequence[str]) -> list[str]:
    """Folders become their ``*.ipynb`` files (sorted, checkpoints skipped); files stay."""
    out: list[str] = []
    for arg in args:
        p = Path(arg)
        if p.is_dir():
            found = sorted(str(f) for f in p.rglob("*.ipynb") if ".ipynb_checkpoints" not in f.parts)
            out += found or [arg]
        else:
            out.append(arg)
    return out


def grade_paths(paths: Sequence[str], timeout: float = DEFAULT_TIMEOUT, jobs: int = 1,
                solutions: str | None = None, checks_dirs: Sequence[str] = (), keep: str | None = None,
                on_result: Callable[[Graded], Any] | None = None, whole: bool = False) -> list[Graded]:
    """Grade many submissions, ``jobs`` at a time; results (and ``on_result`` calls) in the order given.

    With ``jobs > 1`` the files are graded in worker processes. If a worker dies (killed,
    out of memory), the pool breaks and every file it had not finished is graded again,
    one at a time in a fresh worker; a file that kills that worker too gets an internal
    error row, and the files after it are still graded.
    """
    kwargs = dict(timeout=timeout, solutions=solutions, checks_dirs=tuple(checks_dirs), keep=keep, whole=whole)
    results: dict[int, Graded] = {}
    reported = 0

    def collect(index: int, graded: Graded) -> None:
        nonlocal reported
        results[index] = graded
        while reported in results:
            if on_result:
                on_result(results[reported])
            reported += 1

    if jobs <= 1 or len(paths) <= 1:
        from .submission import grade_file  # the heavy imports, in the process that grades

        for index, path in enumerate(paths):
            collect(index, grade_file(path, **kwargs))
        return [results[i] for i in range(len(paths))]
    scratch = scratch_folder()  # where the workers' kernel folders go; removed here, even after a worker died
    try:
        _grade_in_workers(list(enumerate(paths)), min(jobs, len(paths)), {**kwargs, "scratch": scratch}, collect)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return [results[i] for i in range(len(paths))]


def _worker_signals() -> None:
    """In a worker process: Ctrl-C is for the main process, which then sends SIGTERM;
    SIGTERM unwinds the grading (SystemExit), so the worker stops its kernel on the way out."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def _grade_in_worker(path: str, **kwargs: Any) -> Graded:
    """:func:`grade_file` in a worker; after a SIGTERM (the kernel is stopped by then) the
    worker ends instead of taking the next file."""
    from .submission import grade_file

    try:
        return grade_file(path, **kwargs)
    except SystemExit as stop:
        os._exit(stop.code if isinstance(stop.code, int) else 1)


def _grade_in_workers(pending: list[tuple[int, str]], workers: int, kwargs: dict[str, Any],
                      collect: Callable[[int, Graded], None]) -> None:
    while pending:
        broken: list[tuple[int, str]] = []
        blamed = False
        others = set(multiprocessing.active_children())
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_worker_signals) as pool:
            try:
                futures = [(index, path, pool.submit(_grade_in_worker, path, **kwargs)) for index, path in pending]
            except BaseException:
                _stop_workers(pool, others)
                raise
            for index, path, future in futures:
                try:
                    collect(index, future.result())
                except KeyboardInterrupt:
                    _stop_workers(pool, others)
                    raise
                except BrokenProcessPool as exc:
                    if workers == 1 and not blamed:  # one worker, files in order: this one killed it
                        blamed = True
                        collect(index, _failed_in_worker(path, exc, "the worker process died: killed, or out of "
                                                                    "memory?"))
                    else:
                        broken.append((index, path))
                except Exception as exc:  # e.g. the result could not be sent back from the worker
                    collect(index, _failed_in_worker(path, exc))
        pending, workers = broken, 1


def _stop_workers(pool: ProcessPoolExecutor, others: set[multiprocessing.process.BaseProcess]) -> None:
    """Ctrl-C: drop the queued files, SIGTERM the workers (each stops its kernel), wait for them."""
    pool.shutdown(wait=False, cancel_futures=True)
    workers = [p for p in multiprocessing.active_children() if p not in others]
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.join(timeout=30)


def _failed_in_worker(path: str, exc: BaseException, why: str = "") -> Graded:
    graded = Graded(path)
    graded.fail_internally(WORKER_STEP, exc)
    if why:
        graded.rows[0].message += f" ({why})"
    return graded
