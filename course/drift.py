"""Upgrade-drift report: the course re-run under the newest LangGraph releases.

    python -m course.drift [--out drift-report] [--jobs 2] [--keep-venv] [NOTEBOOK ...]

1. Creates a throw-away virtual environment in a temporary folder (never touches .venv),
   installs requirements.txt, then ``pip install --upgrade`` langgraph,
   langgraph-checkpoint, langgraph-checkpoint-sqlite and langchain-core.
2. Runs every solution notebook (or the ones named) under nbval in strict mode in that
   environment, one pytest per notebook (2 at a time), each with a JUnit XML file.
3. Writes ``drift-report/REPORT.md`` (and prints it): pinned, newest released and actually
   installed versions (a newest release whose dependencies do not resolve is named), then per
   notebook the cells whose stored output changed, each with a one-line diff
   (``stored`` = what the notebook holds, ``now`` = what the new versions print).

Needs the package index (network); CI does not run it. Exit code 0: nothing changed;
1: some cell changed or a notebook failed to run; 2: usage error; 3: the environment could
not be built (the report then says why).
"""

from __future__ import annotations

import argparse
import datetime as dt
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name

from helpers.environment import read_pins

from .layout import REQUIREMENTS, ROOT, SANITIZE, SOLUTIONS, chapters

PACKAGES = ("langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite", "langchain-core")
ANSI = re.compile(r"\x1b\[[0-9;]*m|#x1B\[[0-9;]*m")
ONE_LINE = 150
NOTEBOOK_TIMEOUT = 1800


class SetupError(Exception):
    """The throw-away environment could not be built."""


@dataclass
class CellChange:
    cell: str  # "Cell 7" (nbval counts code cells from 0)
    source: str  # first line of the cell's code
    diff: str  # one line


@dataclass
class NotebookResult:
    name: str
    cells: int = 0
    changes: list[CellChange] = field(default_factory=list)
    error: str = ""  # pytest could not run the notebook at all


# --------------------------------------------------------------------------- versions

def pinned_versions(requirements: Path = REQUIREMENTS, packages: Sequence[str] = PACKAGES) -> dict[str, str]:
    """The pinned version of each of ``packages`` ("?" when the file does not pin it)."""
    pins = read_pins(Path(requirements))
    return {p: pins.get(canonicalize_name(p), "?") for p in packages}


def installed_versions(python: Path, packages: Sequence[str] = PACKAGES) -> dict[str, str]:
    code = ("import json, sys, importlib.metadata as m\n"
            "out = {}\n"
            "for p in sys.argv[1:]:\n"
            "    try: out[p] = m.version(p)\n"
            "    except m.PackageNotFoundError: out[p] = '?'\n"
            "print(json.dumps(out))")
    proc = subprocess.run([str(python), "-c", code, *packages], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def released_versions(python: Path, packages: Sequence[str] = PACKAGES) -> dict[str, str]:
    """The newest release on the package index (``pip index versions``), '?' if unknown."""
    out = {}
    for package in packages:
        proc = subprocess.run([str(python), "-m", "pip", "index", "versions", package],
                              capture_output=True, text=True)
        m = re.match(r"^\S+ \(([^)]+)\)", proc.stdout.strip())
        out[package] = m.group(1) if m else "?"
    return out


# --------------------------------------------------------------------------- environment

def build_venv(folder: Path, log: Path) -> Path:
    """A venv in ``folder`` with requirements.txt, then the four packages upgraded."""
    venv = folder / "venv"
    python = venv / "bin" / "python"
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"],
        [str(python), "-m", "pip", "install", "--quiet", "-r", str(REQUIREMENTS)],
        [str(python), "-m", "pip", "install", "--quiet", "--upgrade", *PACKAGES],
    ]
    with open(log, "a", encoding="utf-8") as handle:
        for step in steps:
            handle.write(f"$ {' '.join(step)}\n")
            handle.flush()
            proc = subprocess.run(step, stdout=handle, stderr=subprocess.STDOUT, cwd=folder)
            if proc.returncode:
                raise SetupError(f"`{' '.join(Path(s).name if i == 0 else s for i, s in enumerate(step))}` "
                                 f"failed (exit {proc.returncode}); see {log}")
    return python


def run_notebook(python: Path, notebook: Path, work: Path) -> NotebookResult:
    """nbval (strict) on one notebook in the throw-away environment."""
    junit = work / f"{notebook.stem}.xml"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    # -vv without -q (which would cancel one -v): nbval's assertion diffs are not truncated
    cmd = [str(python), "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", "-vv", "--color=no",
           "-o", "truncation_limit_lines=0", "-o", "truncation_limit_chars=0",
           "--nbval", "--nbval-current-env", "--nbval-sanitize-with", str(SANITIZE),
           "--nbval-cell-timeout=300", f"--junitxml={junit}", str(notebook)]
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=NOTEBOOK_TIMEOUT)
    except subprocess.TimeoutExpired:
        return NotebookResult(notebook.name, error=f"did not finish within {NOTEBOOK_TIMEOUT} s")
    if not junit.exists():
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["no output"]
        return NotebookResult(notebook.name, error=f"pytest exited {proc.returncode}: {tail[0][:ONE_LINE]}")
    return parse_junit(junit.read_text(encoding="utf-8"), notebook.name)


# --------------------------------------------------------------------------- parsing

def parse_junit(xml_text: str, name: str) -> NotebookResult:
    """Cells and failures of one nbval run, from its JUnit XML."""
    result = NotebookResult(name)
    root = ET.fromstring(xml_text)
    for case in root.iter("testcase"):
        result.cells += 1
        problem = next((child for child in case if child.tag in ("failure", "error")), None)
        if problem is None:
            continue
        text = ANSI.sub("", html.unescape(problem.text or problem.get("message", "")))
        source, diff = summarize_failure(text)
        result.changes.append(CellChange(case.get("name", "?"), source, diff))
    return result


def summarize_failure(text: str) -> tuple[str, str]:
    """(first line of the cell's code, one-line diff) from nbval's failure text."""
    lines = text.splitlines()
    source = ""
    if "Input:" in lines:
        after = lines[lines.index("Input:") + 1:]
        source = next((line.strip() for line in after if line.strip()), "")
    body = lines[lines.index("Traceback:") + 1:] if "Traceback:" in lines else lines
    if any("Cell outputs differ" in line for line in lines):
        now = next((line.strip()[2:] for line in body if line.strip().startswith("- ")), None)
        stored = next((line.strip()[2:] for line in body if line.strip().startswith("+ ")), None)
        if now is not None or stored is not None:
            missing = "(not shown)"
            return source, f"stored `{_clip(stored) if stored is not None else missing}` → now " \
                           f"`{_clip(now) if now is not None else missing}`"
        field_line = next((line.strip() for line in body
                           if "output fields" in line or line.strip().startswith("mismatch")), "")
        return source, _clip(field_line or "outputs differ")
    if any("caused an exception" in line for line in lines):
        last = [line.strip() for line in body if line.strip() and not line.strip().startswith("---")]
        return source, f"raises now: `{_clip(last[-1] if last else 'an exception')}`"
    first = next((line.strip() for line in body if line.strip()), "failed")
    return source, _clip(first)


def _clip(text: str, limit: int = ONE_LINE) -> str:
    text = text.replace("`", "'")
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------- report

def format_report(pinned: dict[str, str], newest: dict[str, str], results: Sequence[NotebookResult],
                  generated: str, setup_error: str = "", released: dict[str, str] | None = None) -> str:
    """Markdown report. ``newest`` is what the throw-away environment got after
    ``pip install --upgrade``; ``released`` (optional) the newest release on the index."""
    lines = ["# Upgrade drift report", "",
             f"Generated {generated} by `python -m course.drift`: the solution notebooks re-run under nbval "
             "(strict) in a throw-away environment with the newest releases below. `stored` is the output "
             "the notebook holds, `now` what the newest releases print.", "",
             "| package | pinned | newest release | installed for this run |", "|---|---|---|---|"]
    released = released or {}
    held_back = []
    for package in pinned:
        new = newest.get(package, "?")
        mark = "" if new == pinned[package] else " (newer)"
        release = released.get(package, new)
        if release not in ("?", new) and new != "?":
            held_back.append(f"{package} {release}")
        lines.append(f"| {package} | {pinned[package]} | {release} | {new}{mark} |")
    if held_back:
        lines += ["", f"pip could not install {', '.join(held_back)}: the dependencies of that release do not "
                  "resolve from the package index (see pip.log next to this report), so this run used the "
                  "newest installable release."]
    lines.append("")
    if setup_error:
        lines += [f"**Result:** the environment could not be built: {setup_error}", ""]
        return "\n".join(lines)
    changed = [r for r in results if r.changes or r.error]
    cells = sum(r.cells for r in results)
    diffs = sum(len(r.changes) for r in results)
    if all(newest.get(p) == v for p, v in pinned.items()):
        lines.append("The newest installable releases are the pinned ones: this run only re-checks that the "
                     "course reproduces.")
        lines.append("")
    if not changed:
        lines += [f"**Result:** no drift. All {cells} cells of {len(results)} notebook(s) give the stored "
                  "outputs.", ""]
    else:
        lines += [f"**Result:** {len(changed)} of {len(results)} notebook(s) changed; {diffs} of {cells} "
                  "cells differ.", ""]
    lines += ["| notebook | cells | changed |", "|---|---|---|"]
    for r in results:
        lines.append(f"| {r.name} | {r.cells} | {'did not run' if r.error else len(r.changes)} |")
    for r in changed:
        lines += ["", f"## {r.name}", ""]
        if r.error:
            lines.append(f"- did not run: {r.error}")
        for c in r.changes:
            where = f" `{_clip(c.source, 60)}`" if c.source else ""
            lines.append(f"- {c.cell}{where}: {c.diff}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- command

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.drift", description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="notebooks to run (default: every solutions/NN_*.ipynb)")
    parser.add_argument("--out", default=str(ROOT / "drift-report"), help="report folder (default drift-report/)")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks run at the same time (default 2)")
    parser.add_argument("--keep-venv", action="store_true", help="keep the throw-away environment and say where")
    args = parser.parse_args(argv)
    notebooks = [Path(n) for n in args.notebooks] or chapters(SOLUTIONS)
    missing = [str(n) for n in notebooks if not n.is_file()]
    if missing or args.jobs < 1:
        parser.error(f"no such notebook: {', '.join(missing)}" if missing else "--jobs must be at least 1")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="lgcourse-drift-"))
    pinned, newest, released, results, setup_error = pinned_versions(), {}, {}, [], ""
    try:
        print(f"building a throw-away environment in {work} (a few minutes)...", file=sys.stderr, flush=True)
        try:
            python = build_venv(work, out / "pip.log")
            newest = installed_versions(python)
            released = released_versions(python)
        except (SetupError, subprocess.CalledProcessError) as exc:
            setup_error = str(exc)
        if not setup_error:
            print(f"running {len(notebooks)} notebook(s) under nbval...", file=sys.stderr, flush=True)
            with ThreadPoolExecutor(max_workers=args.jobs) as pool:
                results = list(pool.map(lambda nb: run_notebook(python, nb.resolve(), work), notebooks))
    finally:
        if args.keep_venv:
            print(f"kept the environment: {work / 'venv'}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    generated = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    report = format_report(pinned, newest, results, generated, setup_error, released)
    (out / "REPORT.md").write_text(report, encoding="utf-8")
    print(report)
    print(f"written to {out / 'REPORT.md'}", file=sys.stderr)
    if setup_error:
        return 3
    return 1 if any(r.changes or r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
