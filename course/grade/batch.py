"""Grading files: one submission end to end, and a batch ``jobs`` at a time."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import shutil
import signal
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import nbformat

from ..layout import SOLUTIONS
from .execution import Step, run_notebook
from .kernels import scratch_folder
from .reading import Invalid, exercise_ids, identify_chapter, pristine_learner_copy, read_submission
from .results import DEFAULT_TIMEOUT, INVALID, Graded, Row
from .rewriting import graded_notebook
from .scoring import verdicts

WORKER_STEP = "grading it in a worker process"


def grade_file(path_text: str, shown: str | None = None, timeout: float = DEFAULT_TIMEOUT,
               solutions: str | None = None, checks_dirs: Sequence[str] = (), keep: str | None = None,
               scratch: str | None = None) -> Graded:
    """Grade one submission; never raises (problems become rows). ``scratch``: the folder
    for the kernel's temporary folder (default: the system's temp dir).

    When the grader itself breaks, the file gets one ``error`` row that says so, names the
    step that broke and the exception's first line, and ``internal_error`` is set.
    """
    started = time.perf_counter()
    path = Path(path_text)
    shown = shown if shown is not None else path_text
    solutions_dir = Path(solutions) if solutions else SOLUTIONS
    graded = Graded(shown)
    step = Step("reading the file")
    try:
        try:
            nb = read_submission(path)
        except Invalid as exc:
            step.text = "identifying the chapter"
            solution = identify_chapter(None, path.name, solutions_dir)
            _invalid(graded, solution, str(exc))
            return graded
        step.text = "identifying the chapter"
        solution = identify_chapter(nb, path.name, solutions_dir)
        if solution is None:
            meta = nb.metadata.get("course") if isinstance(nb.metadata.get("course"), dict) else {}
            said = meta.get("slug") or meta.get("chapter")
            hint = f" (its metadata names {said!r})" if said else ""
            _invalid(graded, None, f"unknown chapter{hint}: no course.slug metadata or NN_ file name matches a "
                                   f"chapter in {solutions_dir.name}/")
            return graded
        step.text = f"building the graded notebook from {solution.name}"
        pristine = pristine_learner_copy(solution)
        graded.chapter, graded.title = solution.name[:2], pristine.metadata.get("course", {}).get("title", "")
        run_nb, plan = graded_notebook(pristine, nb, [Path(d) for d in checks_dirs])
        runs = asyncio.run(run_notebook(run_nb, plan, timeout, step, scratch))
        step.text = "reading the check results"
        for ex, status, message in verdicts(run_nb, plan, runs, timeout):
            graded.rows.append(Row(shown, graded.chapter, ex, status, message))
        if keep:
            step.text = f"storing the executed notebook in {keep}"
            _keep(run_nb, Path(keep), path)
    except Exception as exc:  # the grader itself failed: report, mark, keep going
        graded.fail_internally(step.text, exc)
    finally:
        graded.seconds = time.perf_counter() - started
    return graded


def _invalid(graded: Graded, solution: Path | None, message: str) -> None:
    if solution is None:
        graded.rows.append(Row(graded.submission, "", "", INVALID, message))
        return
    nb = nbformat.read(solution, as_version=4)
    graded.chapter = solution.name[:2]
    graded.title = (nb.metadata.get("course") or {}).get("title", "")
    for ex in exercise_ids(nb):
        graded.rows.append(Row(graded.submission, graded.chapter, ex, INVALID, message))
    if not graded.rows:
        graded.rows.append(Row(graded.submission, graded.chapter, "", INVALID, message))


def _keep(nb: Any, folder: Path, path: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / f"{path.stem}.graded.ipynb")


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
                on_result: Callable[[Graded], Any] | None = None) -> list[Graded]:
    """Grade many submissions, ``jobs`` at a time; results (and ``on_result`` calls) in the order given.

    With ``jobs > 1`` the files are graded in worker processes. If a worker dies (killed,
    out of memory), the pool breaks and every file it had not finished is graded again,
    one at a time in a fresh worker; a file that kills that worker too gets an internal
    error row, and the files after it are still graded.
    """
    kwargs = dict(timeout=timeout, solutions=solutions, checks_dirs=tuple(checks_dirs), keep=keep)
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
