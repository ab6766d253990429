"""Grade submitted notebooks: one row per exercise, a score per file, a CSV on request.

    python -m course.grade SUBMISSION.ipynb [MORE.ipynb | FOLDER ...] [--csv FILE]
                            [--timeout SECONDS] [--jobs N] [--solutions DIR] [--keep DIR]

Each submission prints a table (exercise, status, message) and its score (passed/total).
``--csv FILE`` writes one row per exercise with the columns ``submission, chapter,
exercise, status, message``. A folder argument grades every ``*.ipynb`` below it.

Statuses
    passed, failed, not-attempted   what the chapter's check said (failed carries the hint)
    error      the exercise (or its check) raised, or the kernel died before it finished
    timeout    the exercise cell or its check ran longer than ``--timeout`` seconds
    invalid    the file could not be graded: missing, unreadable, not JSON, JSON but not a
               notebook, unknown chapter, or an exercise cell far too large

Exit code 0 when every file was processed, whatever the scores: a bad file (also a path
that does not exist) is reported as ``invalid`` rows and grading goes on. Exit code 2 for
usage errors (bad options, an unwritable ``--csv``). Exit code 1 only when the grader
itself broke on some file (e.g. no Jupyter kernel could start); those rows say
``error: internal grader error``.

How a submission is graded
    1. The chapter comes from the notebook metadata the build writes (``course.slug``, then
       ``course.chapter``), else from the file name (``NN_...``). The pristine source is
       ``solutions/<slug>.ipynb`` next to this package.
    2. The grader builds the notebook it runs from the PRISTINE LEARNER COPY of that chapter
       (``make_learner_copy(annotate(solution))``) and takes only the exercise cells' sources
       from the submission (matched by ``course.exercise`` metadata, then by cell id
       ``exercise-NN-k``, then by "the code cell before the submission's
       ``check("NN.k"`` cell"; when several cells match, the last one). Every other cell
       of the submission is ignored: edited or deleted check cells, edited setup cells and
       cells the learner added never run. An exercise cell that is missing, empty or no
       longer a code cell keeps the pristine stub and is reported ``not-attempted`` with
       the reason ("exercise cell missing from the submission").
    3. Each check cell is replaced by grader code that runs the original ``check(...)``
       call against a FRESH copy of ``helpers/checks`` (``protocol.py`` and the chapter's
       module, loaded from disk under a private package name, so monkeypatching
       ``helpers.checks`` or rebinding ``check`` in an exercise cell has no effect; what a
       chapter module imports from other helpers modules is the kernel's shared copy) and
       signs the result with an HMAC key that is random per check cell and appears nowhere
       before that cell runs.
    4. The notebook runs in a fresh kernel (nbclient), working directory a temporary
       folder, ``allow_errors`` on, one timeout per cell. A cell that times out is
       interrupted; if the kernel does not answer afterwards it is restarted and the earlier
       non-check cells are replayed, so later exercises are still graded. A kernel that
       dies (``os._exit``, out of memory) makes that exercise and all later ones ``error``;
       the next submission is graded normally. Captured output is capped per cell.
    5. Only signed results from the check cell of each exercise count. A bundle printed by
       an exercise cell, an unsigned or wrongly signed bundle, or a bundle for another
       exercise is ignored; a check cell with no valid result is ``error`` with the reason.

Threat model (honest version). This stops the tampering a learner can do by editing the
notebook: deleting or editing check cells, rebinding ``check``, monkeypatching the check
modules, printing a fake result bundle, hiding the answer cell. It does NOT stop a
determined attacker: exercise code runs with full rights in the same kernel and before the
checks, so it can, e.g., install IPython hooks that read the next check cell's source (and
key), inspect stack frames during a check, patch ``hmac``/``json``/builtins, hand the
checker objects whose ``__eq__`` always agrees, or read files on the grading machine.
Grade untrusted submissions in a throw-away container or VM, and read suspicious
submissions yourself (``--keep DIR`` stores the executed notebooks).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import csv
import hashlib
import hmac
import json
import multiprocessing
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any, Iterable, Sequence

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError
from nbclient.util import ensure_async

from helpers.checks.protocol import FAILED, MIME_TYPE, NOT_ATTEMPTED, PASSED
from .learner_copies import make_learner_copy
from .notebook_format import annotate, exercise_of_check, source
from helpers.text_tables import format_table

from . import layout
from .layout import ROOT, SOLUTIONS
CHECKS_DIR = layout.CHECKS

ERROR, TIMEOUT, INVALID = "error", "timeout", "invalid"
STATUSES = (PASSED, FAILED, NOT_ATTEMPTED, ERROR, TIMEOUT, INVALID)
CSV_COLUMNS = ("submission", "chapter", "exercise", "status", "message")

DEFAULT_TIMEOUT = 60
MAX_FILE_BYTES = 50 * 2**20  # a notebook bigger than this is not read
MAX_SOURCE_CHARS = 200_000  # an exercise cell bigger than this is invalid
MAX_OUTPUT_CHARS = 200_000  # captured output kept per cell; the rest is dropped
MAX_SIGNED_PER_CELL = 5
REPLY_GRACE = 5.0  # seconds a kernel gets to answer after a timeout interrupt
SIGNATURE_KEY = "lgcourse-grader"  # output metadata key holding the signature
TIMEOUT_ENAME = "GraderCellTimeout"
CHAPTER_IN_NAME = re.compile(r"(?<![0-9])(\d\d)_")
SLUG = re.compile(r"^\d\d_[A-Za-z0-9_-]+$")


# --------------------------------------------------------------------------- results

@dataclass
class Row:
    submission: str
    chapter: str
    exercise: str
    status: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {c: getattr(self, c) for c in CSV_COLUMNS}


@dataclass
class Graded:
    """The grading of one submission."""

    submission: str
    chapter: str = ""
    title: str = ""
    rows: list[Row] = field(default_factory=list)
    internal_error: bool = False
    seconds: float = 0.0

    @property
    def passed(self) -> int:
        return sum(r.status == PASSED for r in self.rows)

    @property
    def total(self) -> int:
        return sum(1 for r in self.rows if r.exercise)

    @property
    def score(self) -> str:
        return f"{self.passed}/{self.total}"

    def counts(self) -> dict[str, int]:
        return {s: sum(r.status == s for r in self.rows if r.exercise) for s in STATUSES}


# --------------------------------------------------------------------------- reading

class Invalid(Exception):
    """The submission cannot be graded; the message says why."""


def chapter_solutions(solutions: Path) -> dict[str, Path]:
    """Chapter number -> solution path, e.g. ``{"00": .../00_start_here.ipynb}``."""
    return {p.name[:2]: p for p in layout.chapters(Path(solutions))}


def read_submission(path: Path) -> nbformat.NotebookNode:
    """Parse a submission; :class:`Invalid` says why it is not a gradable notebook."""
    if not path.exists():
        raise Invalid("file not found")
    if path.is_dir():
        raise Invalid("a folder without .ipynb files")
    if not path.is_file():
        raise Invalid("not a regular file")
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise Invalid(f"file is {size // 2**20} MB, larger than the {MAX_FILE_BYTES // 2**20} MB limit")
        raw = path.read_bytes()
    except OSError as exc:
        raise Invalid(f"cannot read the file: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise Invalid(f"not a notebook: the file is not JSON ({_first_line(exc)})") from None
    if not isinstance(data, dict) or "nbformat" not in data or not isinstance(data.get("cells", data.get("worksheets")), list):
        raise Invalid("not a notebook: JSON without notebook cells")
    try:
        with warnings.catch_warnings():  # odd but gradable notebooks (no cell ids, ...) are fine
            warnings.simplefilter("ignore")
            nb = nbformat.reads(json.dumps(data), as_version=4)
    except Exception as exc:  # nbformat raises many types for odd documents
        raise Invalid(f"not a notebook: {_first_line(exc)}") from None
    if not isinstance(nb.get("cells"), list):
        raise Invalid("not a notebook: JSON without notebook cells")
    for cell in nb.cells:
        if not isinstance(cell, dict) or not isinstance(cell.get("source", ""), (str, list)):
            raise Invalid("not a notebook: a cell is malformed")
        if not isinstance(cell.get("metadata", {}), dict):
            cell["metadata"] = nbformat.NotebookNode()
    return nb


def identify_chapter(nb: Any, filename: str, solutions: Path) -> Path | None:
    """The solution notebook a submission belongs to, or None."""
    known = chapter_solutions(solutions)
    meta = nb.metadata.get("course") if nb is not None and isinstance(nb.get("metadata"), dict) else None
    if isinstance(meta, dict):
        slug = meta.get("slug")
        if isinstance(slug, str) and SLUG.match(slug) and (Path(solutions) / f"{slug}.ipynb").is_file():
            return Path(solutions) / f"{slug}.ipynb"
        number = meta.get("chapter")
        if isinstance(number, str) and number in known:
            return known[number]
    for match in CHAPTER_IN_NAME.finditer(filename):
        if match.group(1) in known:
            return known[match.group(1)]
    return None


def pristine_learner_copy(solution_path: Path) -> nbformat.NotebookNode:
    """The learner notebook exactly as the build generates it, outputs cleared."""
    nb = nbformat.read(solution_path, as_version=4)
    annotate(nb, solution_path.stem)
    return make_learner_copy(nb)


def _course(cell: Any) -> dict[str, Any]:
    meta = cell.get("metadata")
    course = meta.get("course") if isinstance(meta, dict) else None
    return course if isinstance(course, dict) else {}


def exercise_ids(nb: Any) -> list[str]:
    return [e for c in nb.cells for e in [exercise_of_check(c)] if e]


def find_answers(submission: Any, exercises: Sequence[str]) -> tuple[dict[str, str], dict[str, str]]:
    """Exercise id -> the submission's exercise-cell source, and id -> why it is missing."""
    cells = list(submission.cells)
    answers: dict[str, str] = {}
    missing: dict[str, str] = {}
    for ex in exercises:
        tag = ex.replace(".", "-")
        found = [c for c in cells if _course(c).get("role") == "exercise" and _course(c).get("exercise") == ex]
        if not found:
            found = [c for c in cells if c.get("id") == f"exercise-{tag}"]
        if not found:
            found = [cells[i - 1] for i, c in enumerate(cells)
                     if i and exercise_of_check(c) == ex and cells[i - 1].get("cell_type") == "code"]
        code = [c for c in found if c.get("cell_type") == "code"]
        if not found:
            missing[ex] = "exercise cell missing from the submission"
        elif not code:
            missing[ex] = "the exercise cell is no longer a code cell"
        elif not source(code[-1]).strip():
            missing[ex] = "the exercise cell is empty"
        else:
            answers[ex] = source(code[-1])
    return answers, missing


# --------------------------------------------------------------------------- graded notebook

CHECK_TEMPLATE = '''\
# Check cell rewritten by course.grade: the original call below runs against a fresh copy
# of helpers/checks loaded from disk, and its result is signed for the grader.
def _lgcourse_graded_check(_source={source!r}, _key={key!r}, _paths={paths!r}):
    import hashlib, hmac, importlib.util, json, sys, types
    from IPython.display import publish_display_data
    import helpers  # the fresh package sits inside it, so "from ..travel_graphs import" works
    package = "helpers._grading_" + hashlib.sha256(_key.encode()).hexdigest()[:16]
    module = types.ModuleType(package)
    module.__path__ = list(_paths)
    sys.modules[package] = module
    results = []
    try:
        spec = importlib.util.spec_from_file_location(package + ".protocol", _paths[-1] + "/protocol.py")
        protocol = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = protocol
        spec.loader.exec_module(protocol)

        def check(exercise_id, *answers):
            results.append(protocol.evaluate(exercise_id, *answers))

        namespace = dict(globals())
        namespace["check"] = check
        exec(compile(_source, "<check cell>", "exec"), namespace)
    finally:
        for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
            del sys.modules[name]
    for result in results:
        payload = {{"exercise": result.exercise, "status": result.status, "message": result.message}}
        text = json.dumps([payload["exercise"], payload["status"], payload["message"]])
        signature = hmac.new(_key.encode(), text.encode(), "sha256").hexdigest()
        publish_display_data({{"text/plain": result.line, {mime!r}: payload}},
                             metadata={{{sig_key!r}: {{"signature": signature}}}})


_lgcourse_graded_check()
del _lgcourse_graded_check
'''


def sign(key: str, exercise: str, status: str, message: str) -> str:
    text = json.dumps([exercise, status, message])
    return hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest()


def trusted_check_source(original: str, key: str, paths: Sequence[str]) -> str:
    return CHECK_TEMPLATE.format(source=original, key=key, paths=tuple(paths), mime=MIME_TYPE, sig_key=SIGNATURE_KEY)


@dataclass
class Plan:
    """Where each exercise's cells are in the graded notebook, and the check keys."""

    exercises: list[str]
    exercise_cell: dict[str, int]
    check_cell: dict[str, int]
    keys: dict[str, str]
    missing: dict[str, str]


def graded_notebook(pristine: Any, submission: Any, checks_dirs: Sequence[Path] = ()) -> tuple[Any, Plan]:
    """The notebook the grader runs: pristine cells, the submission's exercise answers."""
    nb = copy.deepcopy(pristine)
    exercises = exercise_ids(nb)
    answers, missing = find_answers(submission, exercises)
    for ex, text in answers.items():
        if len(text) > MAX_SOURCE_CHARS:
            missing[ex] = f"invalid: the exercise cell has {len(text)} characters (limit {MAX_SOURCE_CHARS})"
    paths = [str(Path(d).resolve()) for d in checks_dirs] + [str(CHECKS_DIR)]
    plan = Plan(exercises, {}, {}, {}, missing)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        course = _course(cell)
        ex = course.get("exercise")
        if course.get("role") == "exercise" and ex in exercises:
            plan.exercise_cell[ex] = index
            if ex in answers and ex not in missing:
                cell.source = answers[ex]
        elif course.get("role") == "check" and ex in exercises:
            plan.check_cell[ex] = index
            plan.keys[ex] = secrets.token_hex(32)
            cell.source = trusted_check_source(source(cell), plan.keys[ex], paths)
        cell.outputs, cell.execution_count = [], None
    return nb, plan


# --------------------------------------------------------------------------- execution

@dataclass
class CellRun:
    state: str  # ok, error, timeout, dead, not-run
    detail: str = ""


class _CappedClient(NotebookClient):
    """nbclient with a bound on the output it keeps per cell (memory stays bounded)."""

    def __init__(self, nb: Any, **kw: Any) -> None:
        super().__init__(nb, **kw)
        self.kept_chars: dict[int, int] = {}
        self.kept_signed: dict[int, int] = {}
        self.truncated: set[int] = set()

    def reset_caps(self, index: int) -> None:
        self.kept_chars.pop(index, None)
        self.kept_signed.pop(index, None)
        self.truncated.discard(index)

    def output(self, outs: list[Any], msg: dict[str, Any], display_id: str | None, cell_index: int) -> Any:
        content = msg.get("content", {})
        data = content.get("data") or {}
        if isinstance(data, dict) and MIME_TYPE in data and SIGNATURE_KEY in (content.get("metadata") or {}):
            if self.kept_signed.get(cell_index, 0) < MAX_SIGNED_PER_CELL:
                self.kept_signed[cell_index] = self.kept_signed.get(cell_index, 0) + 1
                return super().output(outs, msg, display_id, cell_index)
            return None
        size = len(str(content.get("text", ""))) + (sum(len(str(v)) for v in data.values()) if isinstance(data, dict) else 0)
        size += sum(len(str(line)) for line in content.get("traceback", []) or [])
        used = self.kept_chars.get(cell_index, 0)
        if used + size > MAX_OUTPUT_CHARS:
            if cell_index not in self.truncated:
                self.truncated.add(cell_index)
                outs.append(nbformat.v4.new_output(
                    "stream", name="stderr",
                    text=f"\n[grader: output beyond {MAX_OUTPUT_CHARS} characters was dropped]\n"))
            return None
        self.kept_chars[cell_index] = used + size
        return super().output(outs, msg, display_id, cell_index)


def kernel_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


async def _responsive(client: NotebookClient, grace: float) -> bool:
    """True if the kernel answers a trivial request within ``grace`` seconds."""
    try:
        msg_id = await ensure_async(client.kc.execute("pass", silent=True, store_history=False))
        deadline = time.monotonic() + grace
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                msg = await ensure_async(client.kc.shell_channel.get_msg(timeout=remaining))
            except Empty:
                return False
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return True
    except Exception:
        return False
    return False


async def _restart_and_replay(client: NotebookClient, nb: Any, upto: int, skip: set[int],
                              checks: set[int], replies: dict[int, Any], launch: dict[str, Any]) -> bool:
    """Fresh kernel, then re-run cells before ``upto`` (not checks, not ``skip``); outputs discarded."""
    try:
        await client._async_cleanup_kernel()
        client.km = client.create_kernel_manager()
        await client.async_start_new_kernel(**launch)
        await client.async_start_new_kernel_client()
        for j in range(upto):
            cell = nb.cells[j]
            if cell.cell_type != "code" or j in skip or j in checks:
                continue
            replies.pop(j, None)
            await client.async_execute_cell(copy.deepcopy(cell), j)
            nb.cells[j] = cell  # keep the first run's outputs
            reply = replies.pop(j, None)
            if reply and reply.get("content", {}).get("ename") == TIMEOUT_ENAME:
                return False
    except Exception:
        return False
    return True


async def run_notebook(nb: Any, plan: Plan, timeout: float, cwd: str) -> dict[int, CellRun]:
    """Execute ``nb`` in place, cell by cell; how each code cell ended."""
    replies: dict[int, Any] = {}
    client = _CappedClient(
        nb, timeout=timeout, kernel_name="python3", allow_errors=True, interrupt_on_timeout=True,
        error_on_timeout={"ename": TIMEOUT_ENAME, "evalue": f"cell ran longer than {timeout:g} s", "traceback": []},
        shutdown_kernel="immediate", startup_timeout=120, resources={"metadata": {"path": cwd}},
        on_cell_executed=lambda cell, cell_index, execute_reply: replies.__setitem__(cell_index, execute_reply),
    )
    env = kernel_env()
    launch = {"env": env, "stderr": subprocess.DEVNULL}  # kernel log noise is not a result
    checks = set(plan.check_cell.values())
    runs: dict[int, CellRun] = {}
    stopped = ""  # why the remaining cells do not run
    timed_out: set[int] = set()
    async with client.async_setup_kernel(**launch):
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            if stopped:
                runs[index] = CellRun("not-run", stopped)
                continue
            replies.pop(index, None)
            client.reset_caps(index)
            try:
                await client.async_execute_cell(cell, index, execution_count=client.code_cells_executed + 1)
            except DeadKernelError:
                runs[index] = CellRun("dead")
                stopped = f"the kernel died earlier, in {_cell_name(plan, index)}"
                continue
            content = (replies.pop(index, None) or {}).get("content", {})
            if content.get("status") != "error":
                runs[index] = CellRun("ok")
            elif content.get("ename") == TIMEOUT_ENAME:
                runs[index] = CellRun("timeout")
                timed_out.add(index)
                if not await _responsive(client, REPLY_GRACE):
                    if not await _restart_and_replay(client, nb, index, timed_out, checks, replies, launch):
                        stopped = f"the kernel did not recover after {_cell_name(plan, index)} timed out"
            else:
                runs[index] = CellRun("error", f"{content.get('ename', 'Error')}: {_first_line(content.get('evalue', ''))}".rstrip(": "))
    return runs


# --------------------------------------------------------------------------- verdicts

def signed_result(outputs: Iterable[Any], key: str, exercise: str) -> dict[str, str] | None:
    """The first correctly signed result for ``exercise`` among a check cell's outputs."""
    for out in outputs:
        if out.get("output_type") not in ("display_data", "execute_result"):
            continue
        payload = (out.get("data") or {}).get(MIME_TYPE)
        sig = ((out.get("metadata") or {}).get(SIGNATURE_KEY) or {}).get("signature")
        if not isinstance(payload, dict) or not isinstance(sig, str):
            continue
        fields = [payload.get("exercise"), payload.get("status"), payload.get("message")]
        if not all(isinstance(f, str) for f in fields):
            continue
        if hmac.compare_digest(sign(key, *fields), sig) and fields[0] == exercise \
                and fields[1] in (PASSED, FAILED, NOT_ATTEMPTED):
            return {"exercise": fields[0], "status": fields[1], "message": fields[2]}
    return None


def verdicts(nb: Any, plan: Plan, runs: dict[int, CellRun], timeout: float) -> list[tuple[str, str, str]]:
    """(exercise, status, message) for every exercise of the chapter, in order."""
    out = []
    for ex in plan.exercises:
        ei, ci = plan.exercise_cell.get(ex), plan.check_cell.get(ex)
        e_run = runs.get(ei, CellRun("ok")) if ei is not None else CellRun("ok")
        c_run = runs.get(ci, CellRun("not-run")) if ci is not None else CellRun("not-run")
        if ex in plan.missing and plan.missing[ex].startswith("invalid: "):
            out.append((ex, INVALID, plan.missing[ex][len("invalid: "):]))
            continue
        if e_run.state == "timeout":
            out.append((ex, TIMEOUT, f"the exercise cell ran longer than {timeout:g} s and was stopped (an endless loop?)"))
            continue
        if c_run.state == "timeout":
            out.append((ex, TIMEOUT, f"checking the answer ran longer than {timeout:g} s and was stopped "
                                     "(does your function loop forever?)"))
            continue
        result = signed_result(nb.cells[ci].get("outputs", []), plan.keys[ex], ex) if ci is not None else None
        if result is not None:
            status, message = result["status"], result["message"]
            if ex in plan.missing:
                status, message = NOT_ATTEMPTED, plan.missing[ex]
            elif e_run.state == "error" and status != PASSED:
                message += f" (your exercise cell also raised {e_run.detail})"
            out.append((ex, status, message))
            continue
        if ex in plan.missing:
            out.append((ex, NOT_ATTEMPTED, plan.missing[ex]))
        elif "dead" in (e_run.state, c_run.state):
            out.append((ex, ERROR, "the kernel died while running this exercise (os._exit, a crash, or out of "
                                   "memory?); later exercises were not graded"))
        elif "not-run" in (e_run.state, c_run.state):
            detail = e_run.detail if e_run.state == "not-run" else c_run.detail
            out.append((ex, ERROR, f"not graded: {detail or 'the check cell did not run'}"))
        elif e_run.state == "error":
            out.append((ex, ERROR, f"the exercise cell raised {e_run.detail}"))
        elif c_run.state == "error":
            out.append((ex, ERROR, f"the check raised {c_run.detail}; run the exercise cell and look at its error"))
        else:
            out.append((ex, ERROR, "the check produced no result (was its output suppressed or redirected?)"))
    return out


def _cell_name(plan: Plan, index: int) -> str:
    for ex, i in plan.exercise_cell.items():
        if i == index:
            return f"exercise {ex}'s cell"
    for ex, i in plan.check_cell.items():
        if i == index:
            return f"the check of exercise {ex}"
    return f"cell {index}"


# --------------------------------------------------------------------------- grading

def grade_file(path_text: str, shown: str | None = None, timeout: float = DEFAULT_TIMEOUT,
               solutions: str | None = None, checks_dirs: Sequence[str] = (), keep: str | None = None) -> Graded:
    """Grade one submission; never raises (problems become rows)."""
    started = time.perf_counter()
    path = Path(path_text)
    shown = shown if shown is not None else path_text
    solutions_dir = Path(solutions) if solutions else SOLUTIONS
    graded = Graded(shown)
    try:
        try:
            nb = read_submission(path)
        except Invalid as exc:
            solution = identify_chapter(None, path.name, solutions_dir)
            _invalid(graded, solution, str(exc))
            return graded
        solution = identify_chapter(nb, path.name, solutions_dir)
        if solution is None:
            meta = nb.metadata.get("course") if isinstance(nb.metadata.get("course"), dict) else {}
            said = meta.get("slug") or meta.get("chapter")
            hint = f" (its metadata names {said!r})" if said else ""
            _invalid(graded, None, f"unknown chapter{hint}: no course.slug metadata or NN_ file name matches a "
                                   f"chapter in {solutions_dir.name}/")
            return graded
        pristine = pristine_learner_copy(solution)
        graded.chapter, graded.title = solution.name[:2], pristine.metadata.get("course", {}).get("title", "")
        run_nb, plan = graded_notebook(pristine, nb, [Path(d) for d in checks_dirs])
        with tempfile.TemporaryDirectory(prefix="lgcourse-grade-") as cwd:
            runs = asyncio.run(run_notebook(run_nb, plan, timeout, cwd))
        for ex, status, message in verdicts(run_nb, plan, runs, timeout):
            graded.rows.append(Row(shown, graded.chapter, ex, status, message))
        if keep:
            _keep(run_nb, Path(keep), path)
    except Exception as exc:  # the grader itself failed: report, mark, keep going
        graded.internal_error = True
        graded.rows = [Row(shown, graded.chapter, "", ERROR, f"internal grader error: {type(exc).__name__}: "
                                                             f"{_first_line(exc)}")]
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
                on_result: Any = None) -> list[Graded]:
    """Grade many submissions, ``jobs`` at a time; results in the order given."""
    results: list[Graded] = []

    def collect(g: Graded) -> None:
        results.append(g)
        if on_result:
            on_result(g)

    kwargs = dict(timeout=timeout, solutions=solutions, checks_dirs=tuple(checks_dirs), keep=keep)
    if jobs <= 1 or len(paths) <= 1:
        for p in paths:
            collect(grade_file(p, **kwargs))
        return results
    with ProcessPoolExecutor(max_workers=min(jobs, len(paths)), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(grade_file, p, **kwargs) for p in paths]
        for p, fut in zip(paths, futures):
            try:
                collect(fut.result())
            except Exception as exc:  # a worker process died
                collect(Graded(p, rows=[Row(p, "", "", ERROR, f"internal grader error: {type(exc).__name__}")],
                               internal_error=True))
    return results


def report(graded: Graded) -> str:
    """The text table of one submission, with its score."""
    head = f"== {graded.submission}"
    if graded.chapter:
        head += f"  ({graded.title or 'chapter ' + graded.chapter})"
    rows = [{"exercise": r.exercise or "-", "status": r.status, "message": r.message} for r in graded.rows]
    counts = graded.counts()
    extra = ", ".join(f"{n} {s}" for s, n in counts.items() if n and s != PASSED)
    score = f"score: {graded.score} passed" + (f" ({extra})" if extra else "")
    return "\n".join([head, format_table(rows, ["exercise", "status", "message"]), score])


def write_csv(handle: Any, results: Iterable[Graded]) -> None:
    writer = csv.DictWriter(handle, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
    writer.writeheader()
    for graded in results:
        for row in graded.rows:
            writer.writerow(row.as_dict())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course.grade", description="Grade submitted course notebooks (one row per exercise).",
        epilog="Exit code 0 when every file was processed (bad files become 'invalid' rows), "
               "2 for usage errors, 1 if the grader itself failed on some file.")
    parser.add_argument("submissions", nargs="+", metavar="SUBMISSION", help="notebook files or folders of notebooks")
    parser.add_argument("--csv", metavar="FILE", help="also write one row per exercise to FILE")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"per-cell time limit (default {DEFAULT_TIMEOUT})")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), metavar="N",
                        help="submissions graded at the same time (default 2)")
    parser.add_argument("--solutions", metavar="DIR", help="folder of solution notebooks (default: the course's solutions/)")
    parser.add_argument("--keep", metavar="DIR", help="store each executed (graded) notebook in DIR for inspection")
    args = parser.parse_args(argv)
    if not args.timeout > 0:
        parser.error("--timeout must be a positive number of seconds")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.solutions and not chapter_solutions(Path(args.solutions)):
        parser.error(f"--solutions {args.solutions}: no NN_*.ipynb notebooks there")
    handle = None
    if args.csv:
        try:
            handle = open(args.csv, "w", encoding="utf-8", newline="")
        except OSError as exc:
            parser.error(f"cannot write --csv {args.csv}: {exc.strerror or exc}")
    paths = expand(args.submissions)

    def show(graded: Graded) -> None:
        print(report(graded) + "\n", flush=True)

    try:
        results = grade_paths(paths, timeout=args.timeout, jobs=args.jobs, solutions=args.solutions,
                              keep=args.keep, on_result=show)
    finally:
        if handle is not None:
            try:
                write_csv(handle, results if "results" in locals() else [])
            finally:
                handle.close()
    total_passed = sum(g.passed for g in results)
    total = sum(g.total for g in results)
    bad = sum(any(r.status == INVALID for r in g.rows) for g in results)
    print(f"graded {len(results)} file(s): {total_passed}/{total} exercises passed"
          + (f"; {bad} file(s) invalid" if bad else "") + (f"; CSV written to {args.csv}" if args.csv else ""))
    if any(g.internal_error for g in results):
        print("the grader itself failed on some file(s): see the 'internal grader error' rows", file=sys.stderr)
        return 1
    return 0


def _first_line(value: Any) -> str:
    lines = str(value).strip().splitlines()
    return lines[0] if lines else (type(value).__name__ if isinstance(value, BaseException) else "")


if __name__ == "__main__":
    sys.exit(main())
