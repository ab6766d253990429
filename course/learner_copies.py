"""Generate a learner copy of a solution notebook (fastbook/nbgrader style).

Each region between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` becomes a stub that
runs without raising, so "Run All" still works for a learner:

* ``answer = <expr>``           -> ``answer = ...``
* ``def f(x): <body>``          -> ``def f(x):`` + docstring + ``return ...``
* ``return <expr>``             -> ``return ...``
* anything else is dropped, and a ``# Your code here`` line stays.

Checks treat ``...`` as "not attempted yet". Cells tagged ``solution`` are removed, and
outputs are cleared (the build executes the copy afterwards).
"""

from __future__ import annotations

import ast
import copy
import textwrap
from typing import Any

from .notebook_format import BEGIN, END, source

PROMPT = "# Your code here: replace each ... with your answer."


class SolutionMarkupError(ValueError):
    """A solution region is malformed (unbalanced markers or not valid Python)."""


def stub_for(region: str, indent: str = "") -> list[str]:
    """The stub lines (with ``indent``) that replace one solution region."""
    try:
        tree = ast.parse(textwrap.dedent(region))
    except SyntaxError as exc:
        raise SolutionMarkupError(f"solution region is not valid Python: {exc.msg} (line {exc.lineno})") from exc
    lines: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                names = [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
                lines += [f"{name} = ..." for name in names]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            lines.append(f"{node.target.id}: {ast.unparse(node.annotation)} = ...")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stub = copy.deepcopy(node)
            doc = ast.get_docstring(node)
            stub.body = ([ast.Expr(ast.Constant(doc))] if doc else []) + [ast.Return(ast.Constant(...))]
            stub.decorator_list = node.decorator_list
            lines += ast.unparse(stub).replace("return ...", "return ...  # your code here").splitlines()
        elif isinstance(node, ast.Return):
            lines.append("return ...")
    body = [PROMPT] + (lines or ["pass"])
    return [indent + line if line else line for line in body]


def strip_solutions(text: str) -> str:
    """Replace every solution region in ``text`` with its stub."""
    out: list[str] = []
    region: list[str] | None = None
    indent = ""
    for number, line in enumerate(text.splitlines(), start=1):
        marker = line.strip()
        if marker == BEGIN:
            if region is not None:
                raise SolutionMarkupError(f"line {number}: {BEGIN} inside another solution region")
            region, indent = [], line[: len(line) - len(line.lstrip())]
        elif marker == END:
            if region is None:
                raise SolutionMarkupError(f"line {number}: {END} without {BEGIN}")
            out += stub_for("\n".join(region), indent)
            region = None
        elif region is not None:
            region.append(line)
        else:
            out.append(line)
    if region is not None:
        raise SolutionMarkupError(f"{BEGIN} is never closed by {END}")
    return "\n".join(out)


def make_learner_copy(solution: Any) -> Any:
    """A learner notebook from an (annotated) solution notebook; outputs cleared."""
    nb = copy.deepcopy(solution)
    cells = []
    for cell in nb.cells:
        if "solution" in cell.metadata.get("tags", []):
            continue
        if cell.cell_type == "code":
            if BEGIN in source(cell) or END in source(cell):
                cell.source = strip_solutions(source(cell))
            cell.outputs, cell.execution_count = [], None
        cells.append(cell)
    nb.cells = cells
    return nb


def solution_lines(solution: Any) -> set[str]:
    """Lines that appear only inside solution regions (what must never leak).

    Lines the stub itself keeps (a function's signature and docstring) are not secret.
    """
    inside: set[str] = set()
    outside: set[str] = set()
    for cell in solution.cells:
        if "solution" in cell.metadata.get("tags", []):
            inside.update(l.strip() for l in source(cell).splitlines() if l.strip())
            continue
        region: list[str] | None = None
        for line in source(cell).splitlines():
            if line.strip() == BEGIN:
                region = []
            elif line.strip() == END and region is not None:
                kept = {l.strip() for l in stub_for("\n".join(region))}
                inside.update(l.strip() for l in region if l.strip() and l.strip() not in kept)
                region = None
            elif region is not None:
                region.append(line)
            elif line.strip():
                outside.add(line.strip())
    trivial = {"...", "pass", "return", ")", "]", "}", "else:", "try:"}
    return {l for l in inside - outside if l not in trivial and not l.startswith("#") and len(l) > 3}
