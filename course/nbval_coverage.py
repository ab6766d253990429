"""How much of the stored output nbval really compares.

    python -m course.nbval_coverage

A code cell counts as compared unless nbval ignores or skips it. Every ignored cell must
say why (``# nbval-ignore-output: <reason>``). In ``notebooks/`` the learner copies also
hide, on purpose, the outputs that would give a prediction or an exercise away
(:mod:`course.learner_copies`); nbval runs those cells there and compares them in
``solutions/``. The course keeps the share of compared cells, not counting those hidden
ones, at or above :data:`THRESHOLD` in each folder.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

from helpers.text_tables import format_table

from .layout import ROOT
from .learner_copies import HIDDEN_METADATA
from .notebook_format import ignore_reason, ignored_by_nbval, source

FOLDERS = ("solutions", "notebooks")
THRESHOLD = 0.95


@dataclass(frozen=True)
class IgnoredCell:
    notebook: str
    cell_id: str
    reason: str | None
    first_line: str


@dataclass(frozen=True)
class FolderCoverage:
    folder: str
    notebooks: int
    code_cells: int
    compared: int
    ignored: tuple[IgnoredCell, ...]
    hidden: tuple[IgnoredCell, ...] = ()

    @property
    def share(self) -> float:
        """Compared cells over the code cells that are not hidden on purpose."""
        counted = self.code_cells - len(self.hidden)
        return self.compared / counted if counted else 1.0


def folder_coverage(folder: Path) -> FolderCoverage:
    code = compared = 0
    ignored: list[IgnoredCell] = []
    hidden: list[IgnoredCell] = []
    books = sorted(folder.glob("*.ipynb"))
    for book in books:
        nb = nbformat.read(book, as_version=4)
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            code += 1
            if ignored_by_nbval(cell):
                first = (source(cell).splitlines() or [""])[0]
                why = cell.metadata.get("course", {}).get(HIDDEN_METADATA)
                if why and not ignore_reason(cell):
                    hidden.append(IgnoredCell(book.name, cell.get("id", "?"), why, first))
                else:
                    ignored.append(IgnoredCell(book.name, cell.get("id", "?"), ignore_reason(cell), first))
            else:
                compared += 1
    return FolderCoverage(folder.name, len(books), code, compared, tuple(ignored), tuple(hidden))


def report(root: Path = ROOT) -> list[FolderCoverage]:
    return [folder_coverage(root / name) for name in FOLDERS]


def main() -> int:
    results = report()
    print(format_table([{"folder": r.folder, "notebooks": r.notebooks, "code cells": r.code_cells,
                         "hidden from learners": len(r.hidden), "compared": r.compared,
                         "share": f"{100 * r.share:.1f}%"} for r in results]))
    for r in results:
        for cell in r.ignored:
            print(f"ignored {r.folder}/{cell.notebook} [{cell.cell_id}]: {cell.reason or 'NO REASON GIVEN'}")
    ok = all(r.share >= THRESHOLD and all(c.reason for c in r.ignored) for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
