"""Every chapter has the parts CONTRIBUTING.md lists, in order, and imports the course by module."""

import ast
import re

import pytest

from course import cheatsheet
from course.notebook_format import BEGIN, exercise_of_check, generated_kind, source
from tests.conftest import SOLUTIONS, read

PREDICT = re.compile(r"^#{2,4} .*predict,? then run", re.IGNORECASE | re.MULTILINE)


def headings(nb):
    """(cell index, '## heading') for each level-2 heading."""
    return [(i, line.strip()) for i, c in enumerate(nb.cells) if c.cell_type == "markdown"
            for line in source(c).splitlines() if line.startswith("## ")]


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_chapter_follows_the_skeleton(path):
    nb = read(path)
    nb.cells = cells = [c for c in nb.cells if not generated_kind(c)]  # the build's banner and links
    assert cells[0].cell_type == "markdown" and source(cells[0]).startswith(f"# {path.stem[:2]} · "), \
        "the first cell is the title '# NN · Name' (above it, only the banner the build writes)"
    found = headings(nb)
    names = [h for _, h in found]
    at = {h: i for i, h in found}
    for required in ("## In this chapter", "## Exercises", "## LangGraph API in this chapter", "## Key points"):
        assert required in names, f"missing section {required!r}"
    intro = source(cells[at["## In this chapter"]])
    for part in ("**Objectives", "**Prerequisites", "**Time:**"):
        assert part in intro, f"'In this chapter' needs {part}"
    first_code = next(i for i, c in enumerate(cells) if c.cell_type == "code")
    assert at["## In this chapter"] < first_code, "the setup cell comes after 'In this chapter'"
    order = ["## In this chapter", "## What changed since the articles", "## Exercises",
             "## LangGraph API in this chapter", "## Key points"]
    positions = [at[h] for h in order if h in at]
    assert positions == sorted(positions), f"sections out of order; expected {order}"
    assert names[-1] == "## Key points", "Key points is the last section"
    assert any(PREDICT.search(source(c)) for c in cells[:at["## Exercises"]] if c.cell_type == "markdown"), \
        "at least one section before the exercises is a 'Predict, then run' heading"
    # the links to the previous and next chapter are the build's (tests/course/test_generated_cells.py)
    handwritten = [line for c in cells if c.cell_type == "markdown" for line in source(c).splitlines()
                   if line.startswith("Next: [")]
    assert not handwritten, f"the build writes the chapter links; remove {handwritten}"


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_each_exercise_is_prompt_then_exercise_then_check(path):
    cells = read(path).cells
    checks = [i for i, c in enumerate(cells) if exercise_of_check(c)]
    assert checks, "a chapter has exercises"
    for i in checks:
        exercise = exercise_of_check(cells[i])
        assert BEGIN in source(cells[i - 1]), f"the cell before check {exercise} is its exercise cell"
        prompt = cells[i - 2]
        assert prompt.cell_type == "markdown" and f"### Exercise {exercise}" in source(prompt), \
            f"the exercise cell of {exercise} follows its prompt '### Exercise {exercise}: ...'"


def code_text(nb):
    return "\n".join(source(c) for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_api_box_lists_what_the_chapter_uses(path):
    box = cheatsheet.api_box(path)
    assert box is not None, f"missing '{cheatsheet.HEADING}'"
    assert box.bullets and len(box.terms) == len(box.bullets), \
        "each line of the API box is '- `name`: what it does'"
    code = code_text(read(path))
    unused = [t for t in box.terms if not re.search(rf"\b{re.escape(cheatsheet.term_name(t))}\b", code)]
    assert not unused, f"the API box lists names no code cell of the chapter uses: {unused}"


def test_cheatsheet_is_current():
    assert cheatsheet.CHEATSHEET.exists(), "run `make cheatsheet`"
    assert cheatsheet.CHEATSHEET.read_text(encoding="utf-8") == cheatsheet.render(), "run `make cheatsheet`"


ALLOWED_FROM_IMPORTS = {("helpers.checks", "check")}


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_course_code_is_imported_by_module(path):
    """`from helpers import tables` ... `tables.print_table(...)`: a glance tells course calls from LangGraph's."""
    bad = []
    for cell in read(path).cells:
        if cell.cell_type != "code":
            continue
        text = "\n".join(line for line in source(cell).splitlines() if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("helpers."):
                bad += [f"from {node.module} import {a.name}" for a in node.names
                        if (node.module, a.name) not in ALLOWED_FROM_IMPORTS]
    assert not bad, ("import course helpers by module (`from helpers import x` or `import helpers.x as x`), "
                     f"not by name: {bad}")
