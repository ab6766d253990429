"""Generate a learner copy of a solution notebook.

The ``### BEGIN SOLUTION`` / ``### END SOLUTION`` markers are nbgrader's; the ``...`` stub is
otter-grader's (``otter assign`` replaces a solution with ``...``), where nbgrader's stub
raises ``NotImplementedError``. Each region between the markers becomes a stub that runs
without raising, so "Run All" still works for a learner:

* ``answer = <expr>``           -> ``answer = ...``
* ``def f(x): <body>``          -> ``def f(x):`` + docstring + ``return ...``
* ``return <expr>``             -> ``return ...``
* anything else is dropped, and a ``# Your code here`` line stays.

Checks treat ``...`` as "not attempted yet". Cells tagged ``solution`` are removed, and
outputs are cleared (the build executes the copy afterwards).

A learner copy never shows an answer before the learner has produced it. Two kinds of
code cell keep no stored output there (:func:`hidden_output_reason`):

* the first code cell after a markdown cell that says "Predict, then run" (the
  prediction's answer), unless it is a check cell;
* a cell whose source has a line ``# spoiler: <what it gives away>`` (for example the
  answer to an exercise a few cells later).

nbval still executes those cells in ``notebooks/`` (the copy tags them
``nbval-ignore-output``) and still compares them in ``solutions/``.

A spoiler that answers an EXERCISE (``# spoiler: answers exercise 06.1``) is gated
instead (:func:`gate`): the copy runs its code only ``if check.revealed("06.1"):``, which
is true once that exercise's check has passed in the kernel. Until then the cell prints
one line saying so, and that line is its stored output, which nbval compares; Run All
never prints the answer. The solution keeps the cell as written, so nbval compares the
answer there. The build refuses a cell it cannot gate safely (:class:`GateError`).

The markdown cell right after a hidden or gated cell reads its output aloud, so it gives
the answer away too: the copy folds it (up to its first heading) into a closed
``<details>`` block whose summary asks the learner to run the cell above first, or says
which exercise a spoiler answers (:func:`fold_reveal`). A lead-in to the next cell sits in
a cell of its own.

The solutions banner (a generated cell, :mod:`course.generated_cells`) is not copied.
"""

from __future__ import annotations

import ast
import copy
import functools
import re
import textwrap
from typing import Any

from .notebook_format import BEGIN, END, exercise_of_check, generated_kind, source

PROMPT = "# Your code here: replace each ... with your answer."
PREDICTION_PROMPT = re.compile(r"predict,? then run", re.IGNORECASE)
SPOILER_MARKER = "# spoiler:"
HIDDEN_METADATA = "hidden_output"  # key in a learner-copy cell's ``course`` metadata
FOLDED_METADATA = "folded_reveal"  # key in a learner-copy markdown cell's ``course`` metadata
GATED_METADATA = "gated_by"  # key in a learner-copy code cell's ``course`` metadata: the exercise id
SPOILED_EXERCISE = re.compile(r"\bexercise (\d\d\.\d+)\b")
GATE = 'if check.revealed("{exercise}"):'
CHECK_IMPORT = re.compile(r"^\s*from helpers\.checks import [^\n]*\bcheck\b", re.MULTILINE)
REVEAL_SUMMARY = "<summary><b>Run the cell above first</b>, then open this to read what it showed.</summary>"
SPOILER_SUMMARY = "<summary><b>Spoiler:</b> this {reason}. Open it once you have tried that yourself.</summary>"
_HEADING = re.compile(r"^#{1,6} ")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)\s*$")


class SolutionMarkupError(ValueError):
    """A solution region is malformed (unbalanced markers or not valid Python)."""


class GateError(SolutionMarkupError):
    """A cell that answers an exercise cannot be gated safely (the message says why and what to change)."""


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


def spoiler_reason(cell: Any) -> str | None:
    """The text after ``# spoiler:`` in a code cell, or None."""
    for line in source(cell).splitlines():
        if line.strip().startswith(SPOILER_MARKER):
            return line.strip()[len(SPOILER_MARKER):].strip() or "gives an answer away"
    return None


def hidden_output_reason(cells: list[Any], index: int) -> str | None:
    """Why the learner copy stores no output for ``cells[index]``, or None if it does."""
    cell = cells[index]
    if cell.get("cell_type") != "code" or exercise_of_check(cell) or spoiled_exercise(cell):
        return None  # a spoiler of an exercise is gated, not hidden (see gate)
    reason = spoiler_reason(cell)
    if reason:
        return f"spoiler: {reason}"
    for previous in reversed(cells[:index]):
        if previous.get("cell_type") == "code":
            return None
        if previous.get("cell_type") == "markdown" and PREDICTION_PROMPT.search(source(previous)):
            return "the answer to a prediction"
    return None


def spoiled_exercise(cell: Any) -> str | None:
    """The exercise id a ``# spoiler:`` line says the cell answers (``"06.1"``), or None.

    A spoiler of a prediction (``# spoiler: answers the prediction above``) names no exercise.
    """
    if cell.get("cell_type") != "code":
        return None
    match = SPOILED_EXERCISE.search(spoiler_reason(cell) or "")
    return match.group(1) if match else None


def reveal_reason(cells: list[Any], index: int) -> str | None:
    """Why the markdown after ``cells[index]`` must be folded: the cell is hidden or gated."""
    hidden = hidden_output_reason(cells, index)
    if hidden:
        return hidden
    return f"spoiler: {spoiler_reason(cells[index])}" if spoiled_exercise(cells[index]) else None


def _parse(text: str) -> ast.Module:
    """Parse cell code as IPython runs it (top-level ``await`` allowed)."""
    return compile(text, "<cell>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                   dont_inherit=True)


def gate(text: str, exercise_id: str) -> str:
    """``text`` (a cell that shows exercise ``exercise_id``'s answer) run only once its check passed.

    The comment lines that open the cell (``# spoiler: ...``) stay as they are; the rest is
    indented under ``if check.revealed("NN.k"):``. The rewrite is proved safe: the indented
    code must parse to the same syntax tree as the original. Otherwise (a multi-line string
    whose content would change, IPython magics, a ``from __future__`` import) it raises
    :class:`GateError`.
    """
    lines = text.splitlines()
    start = 0
    while start < len(lines) and (not lines[start].strip() or lines[start].lstrip().startswith("#")):
        start += 1
    head, body = lines[:start], lines[start:]
    if not body:
        raise GateError(f"the cell answering exercise {exercise_id} has no code to gate")
    try:
        original = _parse("\n".join(body))
    except SyntaxError as exc:
        raise GateError(f"the cell answering exercise {exercise_id} is not plain Python ({exc.msg}, line "
                        f"{(exc.lineno or 0) + start}); the build can only gate Python code: move magics "
                        "and shell lines to another cell") from exc
    gated = head + [GATE.format(exercise=exercise_id)] + [f"    {line}" if line.strip() else "" for line in body]
    result = "\n".join(gated)
    try:
        tree = _parse(result)
        same = ast.dump(ast.Module(body=tree.body[-1].body, type_ignores=[])) == ast.dump(original)
        compile(result, "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except (SyntaxError, AttributeError, IndexError):
        same = False
    if not same:
        raise GateError(f"the cell answering exercise {exercise_id} cannot be indented under "
                        f"`{GATE.format(exercise=exercise_id)}` without changing what it does (a multi-line "
                        "string whose content would change?); build such strings from single-line "
                        "literals or move them to helpers/")
    return result


def _bound_names(tree: ast.AST) -> set[str]:
    """Names a cell binds at module level (assignments, defs, imports, loop and with targets)."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(child.name)  # what its body binds is its own
                continue
            if isinstance(child, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                continue
            if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
                names.add(child.id)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in child.names)
            visit(child)

    visit(tree)
    return names


def _loaded_names(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


@functools.lru_cache(maxsize=4096)
def _names_of(text: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """(names bound at module level, names read) of a cell's Python; None if it does not parse."""
    python = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(("%", "!")))
    try:
        tree = _parse(python)
    except SyntaxError:
        return None
    return frozenset(_bound_names(tree)), frozenset(_loaded_names(tree))


def check_gate_is_safe(cells: list[Any], index: int, exercises: list[str]) -> None:
    """Refuse (:class:`GateError`) to gate ``cells[index]`` when the learner copy would break.

    The exercise must be one of the chapter's, ``check`` must be imported before the cell,
    and no later cell may read a name the gated cell sets before setting it again (in the
    learner copy that name would be unset, or hold an older value).
    """
    exercise_id = spoiled_exercise(cells[index])
    if exercise_id not in exercises:
        raise GateError(f"a '# spoiler:' line names exercise {exercise_id}, which this chapter does not have "
                        f"(its exercises: {', '.join(exercises) or 'none'})")
    if not any(c.get("cell_type") == "code" and CHECK_IMPORT.search(source(c)) for c in cells[:index]):
        raise GateError(f"the cell answering exercise {exercise_id} is gated by `check.revealed`: import "
                        "`from helpers.checks import check` in the setup cell")
    names = _names_of(source(cells[index]))
    pending = set(names[0]) if names else set()
    for later in cells[index + 1:]:
        if not pending:
            return
        names = _names_of(source(later)) if later.get("cell_type") == "code" else None
        if names is None:
            continue
        bound, loaded = names
        used = pending & (loaded - bound)
        if used:
            raise GateError(f"a later cell reads {', '.join(sorted(used))}, set by the cell answering exercise "
                            f"{exercise_id}; in the learner copy that cell runs only after the exercise is "
                            "solved, so set those names in the later cell (or an earlier one) instead")
        pending -= bound


def reveal_summary(hidden_reason: str) -> str:
    """The ``<summary>`` of the fold after a cell hidden for ``hidden_reason``.

    After a prediction it asks for the run first; after a spoiler it says what the fold answers
    (an exercise may still lie ahead, so "run the cell above" would not be enough).
    """
    if hidden_reason.startswith("spoiler: "):
        return SPOILER_SUMMARY.format(reason=hidden_reason.removeprefix("spoiler: "))
    return REVEAL_SUMMARY


def fold_reveal(text: str, summary: str = REVEAL_SUMMARY) -> str:
    """``text`` with everything before its first heading folded into a closed ``<details>``.

    A heading stays outside, so the notebook's table of contents still shows the next section.
    A lead-in to the next cell belongs in a markdown cell of its own, outside the fold.
    """
    lines = text.splitlines()
    cut, fenced = len(lines), False
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced  # a "# comment" inside a code block is not a heading
        elif not fenced and _HEADING.match(line):
            cut = i
            break
        elif not fenced and i and lines[i - 1].strip() and _SETEXT_UNDERLINE.match(line):
            cut = i - 1  # "Title" over "=====" or "-----" is a heading too
            break
    reveal, rest = "\n".join(lines[:cut]).strip("\n"), "\n".join(lines[cut:])
    if not reveal:
        return text
    folded = f"<details>\n{summary}\n\n{reveal}\n\n</details>"
    return f"{folded}\n\n{rest}" if rest else folded


def make_learner_copy(solution: Any) -> Any:
    """A learner notebook from an (annotated) solution notebook; outputs cleared.

    Cells whose output would give a prediction away get ``course.hidden_output`` (the
    reason) and nbval's ``nbval-ignore-output`` tag; :func:`hide_outputs` empties them
    after the build has executed the copy. A cell that answers an exercise is gated
    (:func:`gate`) and gets ``course.gated_by`` (the exercise id); it keeps its output.
    Raises :class:`GateError` for a cell it cannot gate safely.
    """
    nb = copy.deepcopy(solution)
    exercises = [e for c in solution.cells for e in [exercise_of_check(c)] if e]
    cells = []
    for index, cell in enumerate(nb.cells):
        if "solution" in cell.metadata.get("tags", []) or generated_kind(cell) == "banner":
            continue
        hidden_before = index and reveal_reason(solution.cells, index - 1)
        if cell.cell_type == "markdown" and hidden_before:
            folded = fold_reveal(source(cell), reveal_summary(hidden_before))  # it reads a hidden output aloud
            if folded != source(cell):
                cell.source = folded
                cell.metadata.setdefault("course", {})[FOLDED_METADATA] = True
        if cell.cell_type == "code":
            if BEGIN in source(cell) or END in source(cell):
                cell.source = strip_solutions(source(cell))
            cell.outputs, cell.execution_count = [], None
            spoiled = spoiled_exercise(cell)
            if spoiled:
                check_gate_is_safe(solution.cells, index, exercises)
                cell.source = gate(source(cell), spoiled)
                cell.metadata.setdefault("course", {})[GATED_METADATA] = spoiled
            reason = hidden_output_reason(solution.cells, index)
            if reason:
                cell.metadata.setdefault("course", {})[HIDDEN_METADATA] = reason
                tags = cell.metadata.setdefault("tags", [])
                if "nbval-ignore-output" not in tags:
                    tags.append("nbval-ignore-output")
        cells.append(cell)
    nb.cells = cells
    return nb


def hide_outputs(learner: Any) -> Any:
    """Empty the outputs of the cells :func:`make_learner_copy` marked (in place)."""
    for cell in learner.cells:
        if cell.cell_type == "code" and cell.metadata.get("course", {}).get(HIDDEN_METADATA):
            cell.outputs, cell.execution_count = [], None
    return learner


def solution_lines(solution: Any) -> set[str]:
    """Lines that appear only inside solution regions (what must never leak).

    Lines the stub itself keeps (a function's signature and docstring) are not secret.
    """
    inside: set[str] = set()
    outside: set[str] = set()
    for cell in solution.cells:
        if "solution" in cell.metadata.get("tags", []):
            inside.update(line.strip() for line in source(cell).splitlines() if line.strip())
            continue
        region: list[str] | None = None
        for line in source(cell).splitlines():
            if line.strip() == BEGIN:
                region = []
            elif line.strip() == END and region is not None:
                kept = {line.strip() for line in stub_for("\n".join(region))}
                inside.update(line.strip() for line in region if line.strip() and line.strip() not in kept)
                region = None
            elif region is not None:
                region.append(line)
            elif line.strip():
                outside.add(line.strip())
    trivial = {"...", "pass", "return", ")", "]", "}", "else:", "try:"}
    return {line for line in inside - outside if line not in trivial and not line.startswith("#") and len(line) > 3}
