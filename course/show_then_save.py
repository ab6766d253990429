"""Show, then save (d2l's ``#@save``): the helpers a chapter teaches are the cells it shows.

    python -m course.show_then_save          # what is shown, what differs, what is never shown
    python -m course.show_then_save --sync   # write each shown definition into its helper module

A code cell in ``solutions/`` that teaches a definition carries one line per definition::

    # saved as helpers.travel_graphs.build_chat_graph
    def build_chat_graph(checkpointer=None):
        ...

The line names the module and the top-level name (a function, a class or an assigned
constant) that the cell defines. ``helpers/<module>.py`` holds the same definition, and
the rules below keep the two identical and keep the learner's first sight of a lesson in
a chapter cell, not in a helper:

1. every ``# saved as`` line names a definition that the cell itself makes, and the
   module's definition has the same AST (comments and blank lines aside);
2. every public top-level function in ``helpers/`` (checks excluded) whose code builds a
   ``StateGraph(`` is saved from some chapter cell;
3. no code cell uses a saved name before the cell that shows it: not an earlier chapter,
   not an earlier cell of the same chapter (names are read as Python tokens, so strings
   and comments do not count).

The chapter is the source, in one direction (d2l's ``d2lbook build lib``): ``--sync``
replaces each saved definition's lines in its module (decorators included, found with
``ast`` line ranges) by the cell's, and puts one back-reference line directly above it,
``# shown in solutions/NN_topic.ipynb``. The module's other code, its imports and its order
stay as written; a definition the module lacks is appended at its end. Running ``--sync``
on a synced tree changes nothing (``tests/course/test_show_then_save.py``). The module may
be a package: ``helpers.ledger.SCHEMA`` is read from ``helpers/ledger.py`` or from
``helpers/ledger/__init__.py``, and ``helpers.ledger.schema.SCHEMA`` from
``helpers/ledger/schema.py``.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .layout import HELPERS, ROOT, SOLUTIONS, chapters, shown
from .notebook_format import source

SAVED_AS = re.compile(r"^\s*#\s*saved as\s+(helpers(?:\.\w+)+)\s*$", re.MULTILINE)
# the line --sync writes above a definition, and the hand-written markers it replaces there
BACK_REFERENCE = "# shown in solutions/{chapter}.ipynb"
OLD_BACK_REFERENCE = re.compile(r"^# (shown in |saved as helpers\.)")


@dataclass(frozen=True)
class Saved:
    """One ``# saved as helpers.<module>.<name>`` line and the cell that carries it."""

    chapter: str  # notebook stem, e.g. "01_threads"
    cell: int  # index in the notebook's cells
    target: str  # "helpers.travel_graphs.build_chat_graph"
    cell_source: str

    @property
    def module(self) -> str:
        return self.target.rsplit(".", 1)[0]

    @property
    def name(self) -> str:
        return self.target.rsplit(".", 1)[1]

    @property
    def where(self) -> str:
        return f"{self.chapter} cell {self.cell}"

    @property
    def back_reference(self) -> str:
        return BACK_REFERENCE.format(chapter=self.chapter)


def _code_cells(path: Path) -> list[tuple[int, str]]:
    nb = nbformat.read(path, as_version=4)
    return [(i, source(c)) for i, c in enumerate(nb.cells) if c.cell_type == "code"]


def saved_lines(solutions: Path = SOLUTIONS) -> list[Saved]:
    """Every ``# saved as`` line in the chapters, in chapter and cell order."""
    found = []
    for path in chapters(solutions):
        for index, text in _code_cells(path):
            found += [Saved(path.stem, index, target, text) for target in SAVED_AS.findall(text)]
    return found


def top_level_definition(tree: ast.Module, name: str) -> ast.stmt | None:
    """The last top-level statement of ``tree`` that binds ``name`` (def, class or assignment)."""
    found = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            found = node
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            found = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            found = node
    return found


def module_path(module: str, root: Path = ROOT) -> Path:
    """The file of ``module``: ``helpers/x.py``, or ``helpers/x/__init__.py`` for a package."""
    base = root.joinpath(*module.split("."))
    package = base / "__init__.py"
    return package if package.exists() and not base.with_suffix(".py").exists() else base.with_suffix(".py")


def _python_lines(text: str) -> str:
    # IPython magics and shell escapes are not Python (a teaching cell should not need them);
    # they become blank lines, so that line numbers still point into the cell
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in text.splitlines())


def _parse_cell(text: str) -> ast.Module:
    return ast.parse(_python_lines(text))


def _line_span(node: ast.stmt) -> tuple[int, int]:
    """First and last line (1-based, inclusive) of a top-level statement, decorators included."""
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno] + [d.lineno for d in decorators]), node.end_lineno or node.lineno


def mismatch(saved: Saved, root: Path = ROOT) -> str | None:
    """Why ``saved`` breaks rule 1, or None when the cell and the helper agree."""
    try:
        cell_tree = _parse_cell(saved.cell_source)
    except SyntaxError as exc:
        return f"{saved.where}: the cell is not valid Python ({exc.msg}, line {exc.lineno})"
    in_cell = top_level_definition(cell_tree, saved.name)
    if in_cell is None:
        return f"{saved.where} says '# saved as {saved.target}' but defines no top-level {saved.name!r}"
    path = module_path(saved.module, root)
    if not path.exists():
        return f"{saved.where}: {shown(path)} does not exist"
    in_module = top_level_definition(ast.parse(path.read_text(encoding="utf-8")), saved.name)
    if in_module is None:
        return f"{saved.where}: {shown(path)} has no top-level {saved.name!r}"
    if ast.dump(in_cell) != ast.dump(in_module):
        return (f"{saved.where}: {saved.target} differs from the cell that shows it; the cell is the "
                f"source: run python -m course.show_then_save --sync to write it into {shown(path)}")
    return None


def synced_source(module_text: str, saved: list[Saved]) -> str:
    """``module_text`` with each of ``saved`` (all for this module) written from its cell.

    The cell's lines of the definition replace the module's; the line above becomes the
    back-reference. Everything else in the module stays as it is.
    """
    lines = module_text.splitlines()
    for one in saved:
        cell_text = _python_lines(one.cell_source)
        in_cell = top_level_definition(ast.parse(cell_text), one.name)
        if in_cell is None:
            raise ValueError(f"{one.where} says '# saved as {one.target}' but defines no top-level {one.name!r}")
        first, last = _line_span(in_cell)
        segment = [one.back_reference, *cell_text.splitlines()[first - 1:last]]
        in_module = top_level_definition(ast.parse("\n".join(lines)), one.name)
        if in_module is None:
            lines += ["", "", *segment]
            continue
        first, last = _line_span(in_module)
        if first > 1 and OLD_BACK_REFERENCE.match(lines[first - 2]):
            first -= 1  # the old back-reference goes; the segment brings the new one
        lines[first - 1:last] = segment
    return "\n".join(lines) + "\n"


def sync(saved: list[Saved] | None = None, root: Path = ROOT, write: bool = True) -> list[Path]:
    """Write every saved definition from its cell into its module; the modules that changed.

    With ``write=False`` nothing is written: the list says what ``--sync`` would change.
    """
    by_module: dict[str, list[Saved]] = {}
    for one in saved_lines() if saved is None else saved:
        by_module.setdefault(one.module, []).append(one)
    changed = []
    for module, group in by_module.items():
        path = module_path(module, root)
        if not path.exists():
            raise FileNotFoundError(f"{group[0].where}: {shown(path)} does not exist; create the module first")
        before = path.read_text(encoding="utf-8")
        after = synced_source(before, group)
        if after != before:
            changed.append(path)
            if write:
                path.write_text(after, encoding="utf-8")
    return changed


def graph_builders(helpers: Path = HELPERS, root: Path = ROOT) -> list[str]:
    """``helpers.<module>.<name>`` of each public top-level function that builds a StateGraph."""
    found = []
    for path in sorted(helpers.rglob("*.py")):
        if "checks" in path.relative_to(helpers).parts:
            continue  # checkers build graphs around a learner's answer; that is not a lesson
        text = path.read_text(encoding="utf-8")
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        for node in ast.parse(text).body:
            if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_")
                    and "StateGraph(" in (ast.get_source_segment(text, node) or "")):
                found.append(f"{module}.{node.name}")
    return found


def names_used(text: str) -> set[str]:
    """Python NAME tokens in ``text`` (strings and comments excluded)."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        return {tok.string for tok in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline)
                if tok.type == tokenize.NAME}
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return set(re.findall(r"[A-Za-z_]\w*", text))


def used_before_shown(solutions: Path = SOLUTIONS) -> list[str]:
    """Rule 3: uses of a saved name in a cell that comes before the cell showing it."""
    first: dict[str, Saved] = {}
    for saved in saved_lines(solutions):
        first.setdefault(saved.name, saved)
    problems = []
    order = {path.stem: n for n, path in enumerate(chapters(solutions))}
    for path in chapters(solutions):
        for index, text in _code_cells(path):
            used = names_used(text)
            for name, saved in first.items():
                before = (order[path.stem], index) < (order[saved.chapter], saved.cell)
                if before and name in used:
                    problems.append(f"{path.stem} cell {index} uses {name!r} before {saved.where} shows it")
    return problems


def report(solutions: Path = SOLUTIONS, root: Path = ROOT) -> list[str]:
    """Every broken rule, one line each (empty when the course follows show, then save)."""
    lines = saved_lines(solutions)
    problems = [m for m in (mismatch(s, root) for s in lines) if m]
    shown_targets = {s.target for s in lines}
    problems += [f"{target} builds a StateGraph but no chapter cell shows it ('# saved as {target}')"
                 for target in graph_builders(root / "helpers", root) if target not in shown_targets]
    problems += used_before_shown(solutions)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.show_then_save", description=__doc__.split("\n")[0])
    parser.add_argument("--sync", action="store_true",
                        help="write each '# saved as' definition from its chapter cell into its helper module")
    if parser.parse_args(argv).sync:
        for path in sync():
            print(f"wrote {shown(path)}")
    lines = saved_lines()
    print(f"{len(lines)} saved definition(s) shown in chapter cells")
    for saved in lines:
        print(f"  {saved.where:<32} {saved.target}")
    problems = report()
    for problem in problems:
        print("PROBLEM", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
