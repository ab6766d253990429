"""Which code cells the grader must run: the setup, the exercises, their checks, and what they read.

A check calls the learner's function on inputs it builds itself, so most of a chapter (the
servers it starts, the experiments it prints) does not change a grade; running it all made
the grader as slow as the whole chapter (chapter 14 starts PostgreSQL and uvicorn). This
module keeps:

* the roots: every ``setup``, ``exercise`` and ``check`` cell (by ``course`` metadata);
* a backward slice: every earlier code cell that binds a name that a kept cell reads
  (``x = ...``, ``def``, ``class``, ``import``, ``with ... as``, ``for``), transitively;
* every earlier cell with an effect that no name shows: one that assigns an attribute or item of
  something it did not bind itself (``os.environ["K"] = ...``, ``module.FLAG = ...``),
  calls ``os``/``sys``/``warnings``/``logging``/``random``/``importlib``/``asyncio`` functions
  at the top level, uses IPython magics, ``globals()``, ``exec``/``eval``, a star import,
  or does not parse.

Cells after the last check cannot change a grade: one runs only when a kept cell bound every
name it reads (it stops a server that cell started). Anything the analysis cannot see
through keeps the whole notebook (:func:`needed_cells`
returns ``None``). The proof that this changes no grade is in ``tests/course/test_grade_slicing.py``:
every chapter's solution and learner copy, and the wrong answers of the check tests, get
the same rows sliced as in full.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Sequence
from typing import Any

from IPython.core.inputtransformer2 import TransformerManager

from .reading import course_metadata

ROOT_ROLES = ("setup", "exercise", "check")
# Calls that change the process as a whole: the environment, the working folder, import paths,
# warning filters, logging, random seeds, the event loop (any call on a module named in
# PROCESS_MODULES, or a dotted name in PROCESS_CALLS).
PROCESS_MODULES = frozenset({"warnings", "logging", "random", "builtins"})
PROCESS_CALLS = frozenset({"os.putenv", "os.unsetenv", "os.chdir", "os.umask", "os.environ.setdefault",
                           "os.environ.update", "os.environ.pop", "os.environ.clear", "os.environ.popitem",
                           "sys.path.append", "sys.path.insert", "sys.path.extend", "sys.path.remove",
                           "sys.setrecursionlimit", "sys.settrace", "sys.setprofile", "importlib.reload",
                           "importlib.invalidate_caches", "asyncio.set_event_loop",
                           "asyncio.set_event_loop_policy"})
OPAQUE_CALLS = frozenset({"globals", "locals", "vars", "exec", "eval", "get_ipython", "__import__", "setattr",
                          "delattr"})
BUILTIN_NAMES = frozenset(dir(builtins))
_TRANSFORMER = TransformerManager()


class CellNames:
    """What a cell binds, reads and changes, as the backward slice needs it.

    ``binds``: names the cell's own code binds (not inside functions or classes); ``kills``:
    those it binds on every path (a plain top-level statement, also inside ``with``), which
    hide every earlier binding; ``reads``: names read while the cell runs; ``late_reads``:
    names read inside the functions and lambdas it defines, which see the binding current
    when they are *called*, later; ``global_effect``: the cell changes something no name shows.
    """

    def __init__(self, source: str) -> None:
        self.binds: set[str] = set()
        self.kills: set[str] = set()
        self.reads: set[str] = set()
        self.late_reads: set[str] = set()
        self.global_effect = False
        python = _TRANSFORMER.transform_cell(source)
        if "get_ipython()" in python and "get_ipython()" not in source:
            self.global_effect = True  # a magic or shell escape: it may change anything
        tree = compile(python, "<cell>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        for statement in tree.body:
            self._statement(statement, always=True)
        self.reads -= BUILTIN_NAMES
        self.late_reads -= BUILTIN_NAMES

    def _bind(self, name: str, always: bool) -> None:
        self.binds.add(name)
        if always:
            self.kills.add(name)

    def _statement(self, node: ast.AST, always: bool) -> None:
        """One statement of the cell's own code; ``always``: it runs whenever the cell runs."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for part in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]:
                if part is not None:
                    self._expression(part)
            self._late(node)
            self._bind(node.name, always)
        elif isinstance(node, ast.ClassDef):
            for part in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
                self._expression(part)
            for child in node.body:  # the class body runs now; its methods run later
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self._late(child)
                else:
                    for sub in ast.walk(child):
                        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                            self.reads.add(sub.id)
            self._bind(node.name, always)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    raise SyntaxError("a star import binds names nobody can list")
                self._bind(alias.asname or alias.name.split(".")[0], always)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            raise SyntaxError("'global' at the top level of a cell")
        elif isinstance(node, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.Match)) or (
                hasattr(ast, "TryStar") and isinstance(node, ast.TryStar)):
            for field, value in ast.iter_fields(node):
                children = value if isinstance(value, list) else [value]
                for child in children:
                    if isinstance(child, ast.stmt):
                        self._statement(child, always=False)
                    elif isinstance(child, ast.ExceptHandler):
                        if child.type is not None:
                            self._expression(child.type)
                        if child.name:
                            self._bind(child.name, False)
                        for sub in child.body:
                            self._statement(sub, always=False)
                    elif isinstance(child, ast.match_case):
                        for sub in ast.walk(child.pattern):
                            if isinstance(sub, (ast.MatchAs, ast.MatchStar)) and sub.name:
                                self._bind(sub.name, False)
                        if child.guard is not None:
                            self._expression(child.guard)
                        for sub in child.body:
                            self._statement(sub, always=False)
                    elif isinstance(child, ast.AST):
                        self._expression(child, always=False, loop_target=field == "target")
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                self._expression(item.context_expr)
                if item.optional_vars is not None:
                    self._expression(item.optional_vars, always)
            for child in node.body:
                self._statement(child, always)
        else:
            self._expression(node, always)

    def _expression(self, node: ast.AST, always: bool = True, loop_target: bool = False) -> None:
        """Reads, binds (assignment targets, walrus) and process-wide effects of code that runs now."""
        for sub in _walk_now(node):
            if isinstance(sub, ast.Name):
                if isinstance(sub.ctx, ast.Load):
                    self.reads.add(sub.id)
                    if sub.id in OPAQUE_CALLS:
                        self.global_effect = True
                else:
                    self._bind(sub.id, always and not loop_target)
            elif isinstance(sub, ast.NamedExpr):
                self._bind(sub.target.id, False)
            elif isinstance(sub, (ast.Attribute, ast.Subscript)) and isinstance(sub.ctx, (ast.Store, ast.Del)):
                base = _base_name(sub)
                if base is not None and base not in self.binds:
                    self.global_effect = True  # changes an object bound elsewhere (os.environ, a module)
            elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
                if _base_name(sub.func) in PROCESS_MODULES or _dotted(sub.func) in PROCESS_CALLS:
                    self.global_effect = True
            elif isinstance(sub, ast.Lambda):
                self._late(sub)

    def _late(self, function: ast.AST) -> None:
        """A function's body runs when it is called: its free names are late reads."""
        local: set[str] = set()
        loads: set[str] = set()
        for sub in ast.walk(function):
            if isinstance(sub, ast.arg):
                local.add(sub.arg)
            elif isinstance(sub, ast.Name):
                (loads if isinstance(sub.ctx, ast.Load) else local).add(sub.id)
            elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub is not function:
                local.add(sub.name)
            elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                local.update(a.asname or a.name.split(".")[0] for a in sub.names)
            elif isinstance(sub, ast.ExceptHandler) and sub.name:
                local.add(sub.name)
            elif isinstance(sub, (ast.Global, ast.Nonlocal)):
                self.global_effect = True  # it rebinds a module-level name when called
        free = loads - local
        self.late_reads |= free
        if free & OPAQUE_CALLS:
            self.global_effect = True


def _walk_now(node: ast.AST):
    """``ast.walk`` without the bodies of lambdas (they run later); comprehensions run now."""
    todo = [node]
    while todo:
        current = todo.pop()
        yield current
        if isinstance(current, ast.Lambda):
            continue
        todo.extend(ast.iter_child_nodes(current))


def _dotted(node: ast.AST) -> str:
    """``os.environ.pop`` for that attribute chain; "" when the chain has anything but names."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else ""


def _base_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def needed_cells(cells: Sequence[Any], roots: set[int] | None = None) -> set[int] | None:
    """Indices of the code cells to run (roots, their backward slice, global effects); None: run all.

    ``cells`` are nbformat cells with the sources the grader will run (the submission's
    answers in the exercise cells); ``roots`` defaults to the cells whose ``course`` role is
    setup, exercise or check. A name read inside a kept function is read whenever the function
    is called, by any later kept cell (``late``): every cell that binds it is kept, and the
    slice is recomputed until nothing more is kept.
    """
    if roots is None:
        roots = {i for i, c in enumerate(cells)
                 if c.cell_type == "code" and course_metadata(c).get("role") in ROOT_ROLES}
    if not any(course_metadata(cells[i]).get("role") == "exercise" for i in roots):
        return None
    names: dict[int, CellNames | None] = {}
    for index, cell in enumerate(cells):
        if cell.cell_type != "code":
            continue
        try:
            names[index] = CellNames(cell.source)
        except (SyntaxError, ValueError, RecursionError):
            if index in roots and course_metadata(cell).get("role") == "exercise":
                names[index] = None  # the learner's answer does not parse: it fails the same way anywhere
                continue
            return None
    last_root = max(roots)
    keep = set(roots) | {i for i, n in names.items() if n is not None and n.global_effect and i < last_root}
    late: set[str] = set()
    while True:
        wanted = set(late)
        for index in sorted(names, reverse=True):
            info = names[index]
            if info is None:
                continue
            if index not in keep and info.binds & wanted:
                keep.add(index)
            if index in keep:
                wanted = (wanted - (info.kills - late)) | info.reads  # a late name: every binding
        more = set().union(*(names[i].late_reads for i in keep if names[i] is not None)) - late
        if not more:
            return keep | cleanup_cells(names, keep, last_root)
        late |= more


def cleanup_cells(names: dict[int, CellNames | None], keep: set[int], last_root: int) -> set[int]:
    """Cells after the last check: they cannot change a grade, but one may stop what a kept cell
    started (a server). Kept when every name they read is bound by a kept cell."""
    bound = set().union(*(names[i].binds for i in keep if names[i] is not None))
    return {i for i, info in names.items()
            if i > last_root and info is not None and info.reads <= bound and info.late_reads <= bound}
