"""Your progress over all chapters: the course grader run on your own notebooks.

    python -m course.progress [--folder notebooks] [--timeout 60] [--jobs 2]

Save your notebooks first (the grader reads the files, not the open tabs). Every chapter
of ``solutions/`` gets one line: passed/total, how many are not attempted yet, failed, and
errors (an error, a timeout or an unreadable notebook). Below the table, each exercise
that needs attention is listed with its hint.

It is the same grader instructors use (:mod:`course.grade`): each notebook runs in a fresh
kernel in a temporary folder, and only your exercise cells are taken from it. Keep your
whole answer inside the exercise cell: code in cells you added is not run by the grader.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helpers.checks.protocol import FAILED, NOT_ATTEMPTED, PASSED
from helpers.text_tables import format_table

from . import grade
from .layout import NOTEBOOKS

PROBLEMS = (grade.ERROR, grade.TIMEOUT, grade.INVALID)


def short_title(title: str) -> str:
    """``"01 · Threads: one conversation"`` -> ``"Threads: one conversation"``."""
    return title.split("·", 1)[1].strip() if "·" in title else title


def collect(folder: Path = NOTEBOOKS, solutions: Path = grade.SOLUTIONS, timeout: float = grade.DEFAULT_TIMEOUT,
            jobs: int = 2) -> list[dict[str, Any]]:
    """One dict per chapter: chapter, title, passed, total, counts, the graded rows."""
    chapters = grade.chapter_solutions(solutions)
    present = {number: Path(folder) / path.name for number, path in chapters.items()
               if (Path(folder) / path.name).is_file()}
    graded = dict(zip(present, grade.grade_paths([str(p) for p in present.values()], timeout=timeout,
                                                 jobs=jobs, solutions=str(solutions)), strict=True))
    out = []
    for number, solution in chapters.items():
        g = graded.get(number)
        if g is None:
            pristine = grade.pristine_learner_copy(solution)
            title = pristine.metadata.get("course", {}).get("title", solution.stem)
            rows = [grade.Row(str(Path(folder) / solution.name), number, e, NOT_ATTEMPTED,
                              "notebook missing from your folder") for e in grade.exercise_ids(pristine)]
            out.append({"chapter": number, "title": short_title(title), "rows": rows, "missing": True})
        else:
            out.append({"chapter": number, "title": short_title(g.title or solution.stem), "rows": g.rows,
                        "missing": False})
    for entry in out:
        rows = entry["rows"]
        entry["total"] = sum(1 for r in rows if r.exercise)
        entry["passed"] = sum(r.status == PASSED for r in rows)
        entry["not_attempted"] = sum(r.status == NOT_ATTEMPTED for r in rows)
        entry["failed"] = sum(r.status == FAILED for r in rows)
        entry["errors"] = sum(r.status in PROBLEMS for r in rows)
    return out


def format_progress(entries: Sequence[dict[str, Any]]) -> str:
    table = [{"chapter": e["chapter"], "title": e["title"] + (" (notebook missing)" if e["missing"] else ""),
              "passed": f"{e['passed']}/{e['total']}", "not attempted": e["not_attempted"],
              "failed": e["failed"], "errors": e["errors"]} for e in entries]
    passed, total = sum(e["passed"] for e in entries), sum(e["total"] for e in entries)
    table.append({"chapter": "all", "title": "", "passed": f"{passed}/{total}",
                  "not attempted": sum(e["not_attempted"] for e in entries),
                  "failed": sum(e["failed"] for e in entries), "errors": sum(e["errors"] for e in entries)})
    lines = [format_table(table, ["chapter", "title", "passed", "not attempted", "failed", "errors"])]
    todo = [r for e in entries for r in e["rows"] if r.status in (FAILED,) + PROBLEMS]
    if todo:
        lines += ["", "Needs a look:"]
        lines += [f"  [{r.exercise or r.chapter or '?'}] {r.status}: {r.message}" for r in todo]
    nxt = next((r for e in entries for r in e["rows"] if r.status == NOT_ATTEMPTED), None)
    if nxt is not None:
        lines += ["", f"Next exercise to try: {nxt.exercise} in {Path(nxt.submission).name}"]
    elif total and passed == total:
        lines += ["", "Every exercise passed. Well done."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.progress",
                                     description="Grade your own notebooks and show your progress per chapter.")
    parser.add_argument("--folder", default=str(NOTEBOOKS), help="your notebooks (default: the course's notebooks/)")
    parser.add_argument("--timeout", type=float, default=grade.DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"per-cell time limit (default {grade.DEFAULT_TIMEOUT})")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), metavar="N")
    args = parser.parse_args(argv)
    if not Path(args.folder).is_dir():
        parser.error(f"--folder {args.folder}: no such folder")
    if not args.timeout > 0 or args.jobs < 1:
        parser.error("--timeout must be positive and --jobs at least 1")
    print(f"Grading your notebooks in {args.folder} (a fresh kernel per chapter; this takes a minute)...",
          file=sys.stderr, flush=True)
    print(format_progress(collect(Path(args.folder), timeout=args.timeout, jobs=args.jobs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
