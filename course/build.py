"""Build the course: learner copies from solutions, then fresh execution of both folders.

    python -m course.build            # every chapter
    python -m course.build 03 05      # chapters by number or slug
    python -m course.build --check    # exit 1 if any file would change (writes nothing)
    python -m course.build --remeasure 08   # also re-record machine-dependent measurements
    python -m course.build --restamp  # only re-normalize the stored notebooks (no execution)
    python -m course.build --relink   # only rewrite the banner and chapter links (no execution)

It also rewrites CHEATSHEET.md from the chapters' "LangGraph API in this chapter" boxes.
Every solution gets the cells the build generates (:mod:`course.generated_cells`: the
solutions banner, the chapter links), written afresh on each build; a learner copy gates
the cells that show an exercise's answer (:mod:`course.learner_copies`).

solutions/ is the only source. The build reads every selected solution first and stops,
naming the file, if one is not a valid notebook or has broken solution markers; nothing
is written then, so a good learner copy is never overwritten by a broken source. Each
pair is executed in fresh kernels; a pair whose execution fails is reported and not
written. Outputs are stored without timing metadata or widget state, and a file is only
rewritten when its content changes, so a second build in a row changes nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from . import cheatsheet
from .generated_cells import GeneratedCellError, regenerate
from .jupyter_kernels import IpcKernelManager
from .layout import SOLUTIONS, chapters, learner_path, shown
from .learner_copies import GATED_METADATA, SolutionMarkupError, hide_outputs, make_learner_copy
from .notebook_format import annotate, dumps, generated_kind, ignore_reason, normalize

CELL_TIMEOUT = 120


class BuildError(Exception):
    """A source notebook cannot be built; the message names the file."""


@dataclass
class Built:
    slug: str
    texts: dict[Path, str]
    seconds: float
    error: str | None = None


def select(names: list[str], folder: Path | None = None) -> list[Path]:
    folder = folder or SOLUTIONS
    paths = chapters(folder)
    if not names:
        return paths
    def matches(path: Path, name: str) -> bool:
        return path.stem == name or path.stem.startswith(name.rstrip("_") + "_") or path.name == Path(name).name

    chosen = [p for p in paths if any(matches(p, n) for n in names)]
    missing = [n for n in names if not any(matches(p, n) for p in chosen)]
    if missing:
        raise BuildError(f"no chapter in {folder.name}/ matches {', '.join(missing)}")
    return chosen


def read_solution(path: Path) -> nbformat.NotebookNode:
    """Read and validate one solution; BuildError names the file on failure."""
    try:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # JSON errors, schema errors, unreadable files
        raise BuildError(f"{shown(path)} is not a valid notebook: {(str(exc).splitlines() or [repr(exc)])[0]}") from exc
    return nb


def load_solution(path: Path) -> nbformat.NotebookNode:
    """Read, validate and annotate one solution, with its generated cells written afresh.

    BuildError names the file on failure.
    """
    nb = read_solution(path)
    try:
        regenerate(nb, path)  # the banner and the chapter links, written afresh
        annotate(nb, path.stem)
        make_learner_copy(nb)
    except (SolutionMarkupError, GeneratedCellError) as exc:
        raise BuildError(f"{shown(path)}: {exc}") from exc
    return nb


def execute(nb: nbformat.NotebookNode, cwd: Path) -> nbformat.NotebookNode:
    """Run ``nb`` top to bottom in a fresh kernel (cells tagged raises-exception may fail)."""
    NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3", kernel_manager_class=IpcKernelManager,
                   resources={"metadata": {"path": str(cwd)}}).execute()
    return normalize(nb)


def restamp(paths: list[Path]) -> list[Path]:
    """Re-normalize the stored solutions and learner copies of ``paths`` without executing them.

    For a change to :func:`~course.notebook_format.normalize` alone (say, the stored
    ``language_info``): outputs stay as they are. Returns the files whose text changes.
    """
    changed = []
    for path in [p for solution in paths for p in (solution, learner_path(solution)) if p.exists()]:
        text = path.read_text(encoding="utf-8")
        if dumps(normalize(nbformat.reads(text, as_version=4))) != text:
            changed.append(path)
    return changed


def build_pair(path_text: str) -> Built:
    """Execute the solution and its learner copy; return the texts to write."""
    path = Path(path_text)
    started = time.perf_counter()
    solution = load_solution(path)
    learner = make_learner_copy(solution)
    try:
        executed = execute(solution, path.parent)
        shown_values = displayed_values_of_gated_cells(executed, learner)
        if shown_values:
            return Built(path.stem, {}, time.perf_counter() - started,
                         f"cell(s) {', '.join(shown_values)} answer an exercise and end in an expression whose value "
                         "IPython displays; the learner copy runs them under `if check.revealed(...)`, where "
                         "it would not be displayed: print or display() it explicitly")
        texts = {path: dumps(executed),
                 learner_path(path): dumps(hide_outputs(execute(learner, learner_path(path).parent)))}
    except CellExecutionError as exc:
        return Built(path.stem, {}, time.perf_counter() - started, _first_lines(str(exc)))
    return Built(path.stem, texts, time.perf_counter() - started)


def displayed_values_of_gated_cells(executed_solution: nbformat.NotebookNode,
                                    learner: nbformat.NotebookNode) -> list[str]:
    """Ids of the cells the learner copy gates whose executed solution shows an ``Out[]`` value.

    IPython displays the value of a cell's last expression only at the top level, not inside
    the ``if`` of a gate: the learner would miss that output once revealed.
    """
    gated = {c.id for c in learner.cells if c.metadata.get("course", {}).get(GATED_METADATA)}
    return [c.id for c in executed_solution.cells if c.id in gated
            and any(o.get("output_type") == "execute_result" for o in c.get("outputs", []))]


def keep_recorded_measurements(text: str, path: Path) -> str:
    """Keep the stored outputs of ignored cells (measurements) whose source did not change.

    A cell marked ``# nbval-ignore-output:`` prints machine-dependent numbers, such as
    timings. They are a recorded measurement, not a result to re-derive: re-recording
    them on every build would make two builds in a row differ. ``--remeasure`` refreshes them.
    """
    if not path.exists():
        return text
    try:
        old = {c.get("id"): c for c in nbformat.reads(path.read_text(encoding="utf-8"), as_version=4).cells}
    except Exception:  # an unreadable old copy is simply replaced
        return text
    new = nbformat.reads(text, as_version=4)
    for cell in new.cells:
        previous = old.get(cell.get("id"))
        if (cell.cell_type == "code" and ignore_reason(cell) and previous is not None
                and previous.get("source") == cell.get("source")):
            cell["outputs"] = previous.get("outputs", [])
    return dumps(new)


def write_if_changed(path: Path, text: str) -> bool:
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    tmp = path.with_suffix(".ipynb.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # atomic: a reader never sees half a notebook
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapter numbers or slugs (default: all)")
    parser.add_argument("--check", action="store_true", help="report files that would change; write nothing")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--remeasure", action="store_true",
                        help="also refresh the recorded outputs of cells marked '# nbval-ignore-output:'")
    parser.add_argument("--restamp", action="store_true",
                        help="only re-normalize the stored notebooks' metadata and outputs; execute nothing")
    parser.add_argument("--relink", action="store_true",
                        help="only rewrite the generated banner and chapter links (after adding or renaming a "
                             "chapter); execute nothing")
    args = parser.parse_args(argv)
    if args.restamp:
        return restamp_command(args)
    if args.relink:
        return relink_command(args)
    try:
        paths = select(args.chapters)
        for path in paths:  # a broken file is named first, not as a neighbour another chapter links to
            read_solution(path)
        for path in paths:  # validate everything before executing or writing anything
            load_solution(path)
    except BuildError as exc:
        print(f"build stopped: {exc}", file=sys.stderr)
        return 1
    for path in paths:
        learner_path(path).parent.mkdir(exist_ok=True)
    failed, changed = [], []
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for built in pool.map(build_pair, [str(p) for p in paths]):
            if built.error:
                failed.append(built.slug)
                print(f"{built.slug}: execution failed, nothing written\n{built.error}", file=sys.stderr)
                continue
            for path, text in built.texts.items():
                if not args.remeasure:
                    text = keep_recorded_measurements(text, path)
                differs = not path.exists() or path.read_text(encoding="utf-8") != text
                if differs:
                    changed.append(shown(path))
                    if not args.check:
                        write_if_changed(path, text)
            print(f"{built.slug}: built in {built.seconds:.1f}s")
    sheet = cheatsheet.render()
    if not cheatsheet.CHEATSHEET.exists() or cheatsheet.CHEATSHEET.read_text(encoding="utf-8") != sheet:
        changed.append(shown(cheatsheet.CHEATSHEET))
        if not args.check:
            cheatsheet.CHEATSHEET.write_text(sheet, encoding="utf-8")
    verb = "would change" if args.check else "changed"
    print(f"{len(changed)} file(s) {verb}" + "".join(f"\n  {p}" for p in changed))
    if failed:
        return 1
    return 1 if (args.check and changed) else 0


def relink(paths: list[Path]) -> dict[Path, str]:
    """New texts of the solutions and learner copies of ``paths`` whose generated link cells are stale.

    The banner and the chapter links are markdown cells with no outputs, so rewriting them
    alone gives exactly what a full build would store: a chapter added or renamed changes
    its neighbours' links without executing them again.
    """
    texts = {}
    for path in paths:
        solution = read_solution(path)
        try:
            regenerate(solution, path)
        except GeneratedCellError as exc:
            raise BuildError(f"{shown(path)}: {exc}") from exc
        fresh = {generated_kind(c): c for c in solution.cells if generated_kind(c)}
        for target in (path, learner_path(path)):
            if not target.exists():
                continue
            text = target.read_text(encoding="utf-8")
            nb = nbformat.reads(text, as_version=4)
            nb.cells = [fresh[generated_kind(c)] if generated_kind(c) in fresh else c for c in nb.cells]
            new = dumps(normalize(nb))
            if new != text:
                texts[target] = new
    return texts


def relink_command(args: argparse.Namespace) -> int:
    try:
        texts = relink(select(args.chapters))
    except BuildError as exc:
        print(f"build stopped: {exc}", file=sys.stderr)
        return 1
    if not args.check:
        for path, text in texts.items():
            write_if_changed(path, text)
    verb = "would change" if args.check else "changed"
    print(f"{len(texts)} file(s) {verb}" + "".join(f"\n  {shown(p)}" for p in texts))
    return 1 if (args.check and texts) else 0


def restamp_command(args: argparse.Namespace) -> int:
    try:
        paths = select(args.chapters)
    except BuildError as exc:
        print(f"build stopped: {exc}", file=sys.stderr)
        return 1
    changed = restamp(paths)
    if not args.check:
        for path in changed:
            write_if_changed(path, dumps(normalize(nbformat.read(path, as_version=4))))
    verb = "would change" if args.check else "changed"
    print(f"{len(changed)} file(s) {verb}" + "".join(f"\n  {shown(p)}" for p in changed))
    return 1 if (args.check and changed) else 0


def _first_lines(text: str, count: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-count:])


if __name__ == "__main__":
    sys.exit(main())
