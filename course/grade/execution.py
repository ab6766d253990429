"""Running the graded notebook cell by cell: timeouts, interrupts, restarts, dead kernels."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import time
from dataclasses import dataclass
from queue import Empty
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from helpers.checks.protocol import MIME_TYPE

from .kernels import STARTUP_TIMEOUT, GradingKernel
from .results import first_line
from .rewriting import SIGNATURE_KEY, Plan

MAX_OUTPUT_CHARS = 200_000  # captured output kept per cell; the rest is dropped
MAX_SIGNED_PER_CELL = 5
REPLY_GRACE = 5.0  # seconds a kernel gets to answer after a timeout interrupt
# nbclient waits this long for a cell's output after the kernel's reply; the outputs travel
# on another socket and a starved kernel sends them late (nbclient's default is 4 s).
IOPUB_GRACE = 10
TIMEOUT_ENAME = "GraderCellTimeout"


@dataclass
class CellRun:
    state: str  # ok, error, timeout, dead, not-run
    detail: str = ""


class Step:
    """What grading one file is doing now; an internal-error row names it."""

    def __init__(self, text: str = "reading the file") -> None:
        self.text = text


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
        size = len(str(content.get("text", "")))
        size += sum(len(str(v)) for v in data.values()) if isinstance(data, dict) else 0
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


def cell_name(plan: Plan, index: int) -> str:
    for ex, i in plan.exercise_cell.items():
        if i == index:
            return f"exercise {ex}'s cell"
    for ex, i in plan.check_cell.items():
        if i == index:
            return f"the check of exercise {ex}"
    return f"cell {index}"


def _reraise_cancellation() -> None:
    """nbclient reports a cancelled cell as a dead kernel; a cancelled grading (Ctrl-C, or a
    worker told to stop) must unwind instead of grading on."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


async def _responsive(client: NotebookClient, grace: float) -> bool:
    """True if the kernel answers a trivial request within ``grace`` seconds."""
    kc = client.kc
    if kc is None:
        return False
    try:
        msg_id = kc.execute("pass", silent=True, store_history=False)
        deadline = time.monotonic() + grace
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                msg = await kc.shell_channel.get_msg(timeout=remaining)
            except Empty:
                return False
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return True
    except Exception:  # a probe: no answer for any reason means "restart it"
        return False
    return False


async def _restart_and_replay(client: NotebookClient, kernel: GradingKernel, nb: Any, upto: int, skip: set[int],
                              checks: set[int], replies: dict[int, Any]) -> bool:
    """Fresh kernel, then re-run cells before ``upto`` (not checks, not ``skip``); outputs discarded.

    False when the submission's own code stops the replay (a replayed cell times out or
    kills the kernel). A kernel that cannot be started raises: that is the grader's failure.
    """
    await kernel.restart(client)
    for j in range(upto):
        cell = nb.cells[j]
        if cell.cell_type != "code" or j in skip or j in checks:
            continue
        replies.pop(j, None)
        try:
            await client.async_execute_cell(copy.deepcopy(cell), j)
        except DeadKernelError:
            _reraise_cancellation()
            return False
        finally:
            nb.cells[j] = cell  # keep the first run's outputs
        reply = replies.pop(j, None)
        if reply and reply.get("content", {}).get("ename") == TIMEOUT_ENAME:
            return False
    return True


async def run_notebook(nb: Any, plan: Plan, timeout: float, step: Step | None = None,
                       scratch: str | None = None) -> dict[int, CellRun]:
    """Execute ``nb`` in place, cell by cell, in a fresh kernel; how each code cell ended.

    ``step`` is kept up to date, so that an exception can be reported with what was under
    way. The kernel and its folder (in ``scratch``, see :class:`GradingKernel`) are gone
    when this returns or raises.
    """
    step = step or Step()
    kernel = GradingKernel(scratch)
    replies: dict[int, Any] = {}
    client = _CappedClient(
        nb, km=kernel.manager, timeout=timeout, allow_errors=True, interrupt_on_timeout=True,
        error_on_timeout={"ename": TIMEOUT_ENAME, "evalue": f"cell ran longer than {timeout:g} s", "traceback": []},
        startup_timeout=STARTUP_TIMEOUT, iopub_timeout=IOPUB_GRACE, resources={"metadata": {"path": str(kernel.cwd)}},
        on_cell_executed=lambda cell, cell_index, execute_reply: replies.__setitem__(cell_index, execute_reply),
    )
    try:
        step.text = "starting the kernel"
        await kernel.start(client)
        runs = await _run_cells(client, kernel, nb, plan, replies, step)
    except BaseException:
        with contextlib.suppress(Exception):  # the first error is the one to report
            await kernel.stop(client)
        raise
    step.text = "stopping the kernel"
    await kernel.stop(client)
    return runs


async def _run_cells(client: _CappedClient, kernel: GradingKernel, nb: Any, plan: Plan, replies: dict[int, Any],
                     step: Step) -> dict[int, CellRun]:
    checks = set(plan.check_cell.values())
    runs: dict[int, CellRun] = {}
    stopped = ""  # why the remaining cells do not run
    timed_out: set[int] = set()
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if stopped:
            runs[index] = CellRun("not-run", stopped)
            continue
        step.text = f"running {cell_name(plan, index)}"
        replies.pop(index, None)
        client.reset_caps(index)
        try:
            await client.async_execute_cell(cell, index, execution_count=client.code_cells_executed + 1)
        except DeadKernelError:
            _reraise_cancellation()
            runs[index] = CellRun("dead")
            stopped = f"the kernel died earlier, in {cell_name(plan, index)}"
            continue
        content = (replies.pop(index, None) or {}).get("content", {})
        if content.get("status") != "error":
            runs[index] = CellRun("ok")
        elif content.get("ename") == TIMEOUT_ENAME:
            runs[index] = CellRun("timeout")
            timed_out.add(index)
            if not await _responsive(client, REPLY_GRACE):
                step.text = f"restarting the kernel after {cell_name(plan, index)} timed out"
                if not await _restart_and_replay(client, kernel, nb, index, timed_out, checks, replies):
                    stopped = f"the kernel did not recover after {cell_name(plan, index)} timed out"
        else:
            error = f"{content.get('ename', 'Error')}: {first_line(content.get('evalue', ''))}"
            runs[index] = CellRun("error", error.rstrip(": "))
    return runs
