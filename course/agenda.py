"""Chapter timings for workshop agendas, read from the notebooks themselves.

    python -m course.agenda             # table: chapter, title, minutes, running total
    python -m course.agenda --markdown  # the rows of INSTRUCTORS.md's "Chapter timings" table

Each chapter states ``**Time:** NN minutes`` in its "In this chapter" cell; the build stores
it as ``metadata.course.minutes``. A solution that has not been built yet is read from its
cells directly, so the numbers are always the notebooks' own. tests/course/test_agenda.py checks
that INSTRUCTORS.md agrees with them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import nbformat

from helpers.text_tables import format_table

from .layout import SOLUTIONS, chapters
from .notebook_format import chapter_metadata


def chapter_times(solutions: Path = SOLUTIONS) -> list[dict[str, Any]]:
    """One dict per chapter: chapter, title (without the number), minutes (or None)."""
    out = []
    for path in chapters(Path(solutions)):
        nb = nbformat.read(path, as_version=4)
        stored = nb.metadata.get("course") if isinstance(nb.metadata.get("course"), dict) else {}
        derived = chapter_metadata(nb, path.stem)
        title = stored.get("title") or derived["title"]
        minutes = stored.get("minutes") if stored.get("minutes") is not None else derived["minutes"]
        out.append({"chapter": path.name[:2], "title": title.split("·", 1)[-1].strip(), "minutes": minutes})
    return out


def clock(minutes: int) -> str:
    return f"{minutes // 60}:{minutes % 60:02d}"


def format_agenda(times: list[dict[str, Any]]) -> str:
    running, rows = 0, []
    for t in times:
        running += t["minutes"] or 0
        rows.append({**t, "total": clock(running)})
    known = [t for t in times if t["minutes"] is not None]
    lines = [format_table(rows, ["chapter", "title", "minutes", "total"])]
    lines.append(f"total: {running} minutes ({clock(running)}) over {len(known)} chapter(s)")
    missing = [t["chapter"] for t in times if t["minutes"] is None]
    if missing:
        lines.append(f"no **Time:** line in chapter(s) {', '.join(missing)}")
    return "\n".join(lines)


def markdown_rows(times: list[dict[str, Any]]) -> str:
    return "\n".join(f"| {t['chapter']} | {t['title']} | {t['minutes'] if t['minutes'] is not None else '?'} |"
                     for t in times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.agenda", description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print the rows of INSTRUCTORS.md's timings table")
    parser.add_argument("--solutions", default=str(SOLUTIONS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    times = chapter_times(Path(args.solutions))
    print(markdown_rows(times) if args.markdown else format_agenda(times))
    return 0


if __name__ == "__main__":
    sys.exit(main())
