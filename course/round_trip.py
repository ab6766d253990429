"""Prove that every chapter survives the notebook -> percent script -> notebook round trip.

    python -m course.round_trip      # needs the maintainer extra: pip install -e '.[dev]'

Maintainers may edit a chapter as a plain ``# %%`` script with jupytext (see
CONTRIBUTING.md). That is only safe if jupytext gives back the same cells: the same types,
sources and tags, raw cells included. ``make lint`` runs this check in CI.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

from .layout import SOLUTIONS, chapters

FORMAT = "py:percent"


def cell_key(cell: nbformat.NotebookNode) -> tuple[str, str, tuple[str, ...]]:
    return cell.cell_type, cell.source, tuple(cell.metadata.get("tags", []))


def differences(path: Path) -> list[str]:
    """Where the round trip of one chapter changes a cell (empty when it is exact)."""
    import jupytext  # maintainer extra; learners never need it

    nb = nbformat.read(path, as_version=4)
    back = jupytext.reads(jupytext.writes(nb, fmt=FORMAT), fmt=FORMAT)
    problems = []
    if len(nb.cells) != len(back.cells):
        problems.append(f"{path.name}: {len(nb.cells)} cells became {len(back.cells)}")
    problems += [f"{path.name} cell {i}: {cell_key(a)[0]} cell changed"
                 for i, (a, b) in enumerate(zip(nb.cells, back.cells, strict=False)) if cell_key(a) != cell_key(b)]
    return problems


def main() -> int:
    try:
        import jupytext  # noqa: F401
    except ImportError:
        print("jupytext is not installed: run `make dev` (pip install -e '.[dev]')", file=sys.stderr)
        return 1
    problems = [p for path in chapters(SOLUTIONS) for p in differences(path)]
    for problem in problems:
        print(problem)
    print(f"{len(chapters(SOLUTIONS))} chapters, {len(problems)} round-trip difference(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
