"""The command line: a table and a score per file, the CSV, the exit code."""

from __future__ import annotations

import argparse
import csv
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from helpers.checks.protocol import PASSED
from helpers.text_tables import format_table

from ..layout import chapters
from .batch import expand, grade_paths
from .results import CSV_COLUMNS, DEFAULT_TIMEOUT, INTERNAL_ERROR, INVALID, Graded


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
    parser.add_argument("--solutions", metavar="DIR",
                        help="folder of solution notebooks (default: the course's solutions/)")
    parser.add_argument("--keep", metavar="DIR", help="store each executed (graded) notebook in DIR for inspection")
    parser.add_argument("--whole", action="store_true",
                        help="run every code cell of the chapter, not only those the exercises and checks need")
    args = parser.parse_args(argv)
    if not args.timeout > 0:
        parser.error("--timeout must be a positive number of seconds")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.solutions and not chapters(Path(args.solutions)):
        parser.error(f"--solutions {args.solutions}: no NN_*.ipynb notebooks there")
    handle = None
    if args.csv:
        try:
            handle = open(args.csv, "w", encoding="utf-8", newline="")
        except OSError as exc:
            parser.error(f"cannot write --csv {args.csv}: {exc.strerror or exc}")
    paths = expand(args.submissions)

    results: list[Graded] = []  # in the order given, as they come

    def show(graded: Graded) -> None:
        results.append(graded)
        print(report(graded) + "\n", flush=True)

    try:
        grade_paths(paths, timeout=args.timeout, jobs=args.jobs, solutions=args.solutions, keep=args.keep,
                    on_result=show, whole=args.whole)
    except KeyboardInterrupt:
        print(f"interrupted: {len(results)} of {len(paths)} file(s) graded", file=sys.stderr)
        return 130
    finally:
        if handle is not None:
            try:
                write_csv(handle, results)
            finally:
                handle.close()
    total_passed = sum(g.passed for g in results)
    total = sum(g.total for g in results)
    bad = sum(any(r.status == INVALID for r in g.rows) for g in results)
    print(f"graded {len(results)} file(s): {total_passed}/{total} exercises passed"
          + (f"; {bad} file(s) invalid" if bad else "") + (f"; CSV written to {args.csv}" if args.csv else ""))
    if any(g.internal_error for g in results):
        broken = [g.submission for g in results if g.internal_error]
        print(f"the grader itself failed on {len(broken)} file(s); their '{INTERNAL_ERROR}' rows say at which "
              "step: " + ", ".join(broken), file=sys.stderr)
        return 1
    return 0
