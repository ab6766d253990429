"""Run All never prints an exercise's answer in a learner copy (issue 23, item 6).

A cell that answers an exercise (``# spoiler: answers exercise NN.k``) is gated in the learner
copy: ``if check.revealed("NN.k"):`` around its code. The proof has two parts:

* every stored learner copy: each gated cell is compared by nbval (strict mode runs the
  stored notebook in a fresh kernel, top to bottom, as a learner's Run All, and fails when an
  output differs from the stored one), and its stored output is the one line that says
  what to do first, with none of the solution's output in it;
* a small fixture chapter, really executed: Run All of its learner copy prints that line
  (for a spoiler before and after its exercise), and after the learner's own answer passes
  the check, the same cell prints the answer.
"""

from __future__ import annotations

import ast

import nbformat
import pytest
from nbclient import NotebookClient

from course import build
from course.jupyter_kernels import IpcKernelManager
from course.learner_copies import (
    GATE,
    GATED_METADATA,
    GateError,
    check_gate_is_safe,
    gate,
    make_learner_copy,
    spoiled_exercise,
)
from course.notebook_format import BEGIN, END, annotate, ignored_by_nbval, source
from helpers.checks.protocol import NOT_REVEALED
from tests.conftest import NOTEBOOKS, ROOT, read


def output_text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out["text"])
        else:
            parts.append(str(out.get("data", {}).get("text/plain", "")) + str(out.get("traceback", "")))
    return "".join(parts)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_run_all_of_a_learner_copy_prints_no_exercise_answer(path):
    learner = read(path)
    solution = read(ROOT / "solutions" / path.name)
    by_id = {c.id: c for c in learner.cells}
    answering = [c for c in solution.cells if spoiled_exercise(c)]
    gated = [c for c in learner.cells if c.metadata.get("course", {}).get(GATED_METADATA)]
    assert [c.id for c in gated] == [c.id for c in answering], "each cell that answers an exercise is gated"
    for answer in answering:
        exercise, cell = spoiled_exercise(answer), by_id[answer.id]
        assert cell.metadata["course"][GATED_METADATA] == exercise
        assert GATE.format(exercise=exercise) in source(cell).splitlines()
        # nbval compares it: the stored output IS what Run All prints from the pristine copy
        assert not ignored_by_nbval(cell) or ignored_by_nbval(answer), f"{cell.id}: nbval must compare it"
        assert output_text(cell) == NOT_REVEALED.format(exercise=exercise) + "\n", f"{cell.id} prints more"
        shown = {line.strip() for line in output_text(answer).splitlines() if line.strip()}
        assert shown, f"{answer.id}: the solution's cell prints its answer (nbval compares it there)"
        assert not shown & {line.strip() for line in output_text(cell).splitlines()}
    # and no check before a gated cell passes in the pristine copy (so nothing opens the gate)
    for cell in learner.cells:
        if cell.metadata.get("course", {}).get("role") == "check":
            assert "[" + cell.metadata["course"]["exercise"] + "] passed" not in output_text(cell)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_gate_changes_no_other_output_of_the_learner_copy(path):
    """Outside the exercises, their checks and the hidden or gated cells, Run All of the learner copy
    prints what the solution prints: no later cell depended on what a gated cell did."""
    solution = {c.id: c for c in read(ROOT / "solutions" / path.name).cells}
    differ = [c.id for c in read(path).cells if c.cell_type == "code" and not ignored_by_nbval(c)
              and not {"hidden_output", GATED_METADATA} & set(c.metadata.get("course", {}))
              and c.metadata.get("course", {}).get("role") not in ("exercise", "check")
              and c.outputs != solution[c.id].outputs]
    assert not differ, f"these cells print something else in the learner copy: {differ}"


# --- the gate, on a small chapter executed for real ----------------------------------------

SETUP = '''from helpers.checks import check, exercise, Fail, call_answer

@exercise("99.1")
def check_double(func):
    if call_answer(func, 21) != 42:
        raise Fail("double it")
    return "doubles"'''
BEFORE = '# spoiler: answers exercise 99.1\nprint("answer before: return 2 * n")'
AFTER = '''# spoiler: answers exercise 99.1 (and more)
def shown(n):
    return 2 * n

print("answer after:", shown(21))'''
SOLVED = "def double(n):\n    return 2 * n"


def fixture_chapter() -> nbformat.NotebookNode:
    make = {"md": nbformat.v4.new_markdown_cell, "code": nbformat.v4.new_code_cell}
    nb = nbformat.v4.new_notebook()
    nb.cells = [make[k](t) for k, t in [
        ("md", "# 99 · Fixture"), ("code", SETUP), ("code", BEFORE), ("md", "It doubles."),
        ("md", "### Exercise 99.1: double"), ("code", f"{BEGIN}\n{SOLVED}\n{END}"), ("code", 'check("99.1", double)'),
        ("code", AFTER), ("md", "Reads the answer aloud."), ("code", 'print("after the gate")')]]
    return annotate(nb, "99_fixture")


def test_the_learner_copy_shows_an_answer_only_after_its_check_passed_in_the_kernel(tmp_path):
    learner = make_learner_copy(fixture_chapter())
    client = NotebookClient(learner, kernel_name="python3", kernel_manager_class=IpcKernelManager, timeout=60,
                            resources={"metadata": {"path": str(tmp_path)}})
    line = NOT_REVEALED.format(exercise="99.1") + "\n"
    with client.setup_kernel():
        for index, cell in enumerate(learner.cells):  # Run All, from the pristine copy
            if cell.cell_type == "code":
                client.execute_cell(cell, index)
        texts = [output_text(c) for c in learner.cells]
        assert texts[2] == line and texts[7] == line  # before and after the exercise: one line each
        assert "not attempted yet" in texts[6]
        assert texts[9] == "after the gate\n"  # Run All went on
        assert "answer before" not in "".join(texts) and "answer after" not in "".join(texts)
        # the learner answers wrongly: still closed
        learner.cells[5].source = "def double(n):\n    return n + 2"
        for index in (5, 6, 7):
            client.execute_cell(learner.cells[index], index)
        assert "failed" in output_text(learner.cells[6]) and output_text(learner.cells[7]) == line
        # then rightly: the check passes, and the gated cells (run again) show the answer
        learner.cells[5].source = SOLVED
        for index in (5, 6, 7, 2):
            client.execute_cell(learner.cells[index], index)
        assert "[99.1] passed" in output_text(learner.cells[6])
        assert output_text(learner.cells[7]) == "answer after: 42\n"
        assert output_text(learner.cells[2]) == "answer before: return 2 * n\n"


def test_the_solution_keeps_its_spoiler_cells_as_written():
    solution = fixture_chapter()
    learner = make_learner_copy(solution)
    assert source(solution.cells[7]) == AFTER  # nbval compares the answer in solutions/
    assert source(learner.cells[7]).splitlines()[:3] == [
        "# spoiler: answers exercise 99.1 (and more)", 'if check.revealed("99.1"):', "    def shown(n):"]
    assert learner.cells[7].metadata["course"][GATED_METADATA] == "99.1"
    assert "tags" not in learner.cells[7].metadata  # compared by nbval in notebooks/ too
    assert "<summary><b>Spoiler:</b> this answers exercise 99.1" in source(learner.cells[8])  # the reveal is folded


def test_a_spoiler_of_a_prediction_is_still_hidden_not_gated():
    nb = fixture_chapter()
    nb.cells[2].source = "# spoiler: answers the prediction above\nprint(6)"
    learner = make_learner_copy(annotate(nb, "99_fixture"))
    assert source(learner.cells[2]) == source(nb.cells[2])
    assert learner.cells[2].metadata["course"] == {"hidden_output": "spoiler: answers the prediction above"}


# --- what the build refuses --------------------------------------------------------------

def test_gate_keeps_the_code_exactly():
    text = ("# spoiler: answers exercise 99.1\n# nbval-ignore-output: a race\n\nx = [1,\n     2]\n\n"
            "for i in x:\n    print(f'{i}')\nawait something()")
    gated = gate(text, "99.1")
    assert gated.splitlines()[:4] == ["# spoiler: answers exercise 99.1", "# nbval-ignore-output: a race", "",
                                      'if check.revealed("99.1"):']
    assert "\n\n" in gated.split("if check", 1)[1]  # a blank line stays blank (no trailing spaces)
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    assert ast.dump(compile(gated, "c", "exec", flags=flags).body[0].body[0]) == \
        ast.dump(compile("x = [1,\n     2]", "c", "exec", flags=flags).body[0])


@pytest.mark.parametrize("text,message", [
    ('# spoiler: answers exercise 99.1\nsql = """\nSELECT 1\n"""\nprint(sql)', "multi-line string"),
    ("# spoiler: answers exercise 99.1\nprint('a\\\nb')", "multi-line string"),
    ("# spoiler: answers exercise 99.1\n%time print(1)", "not plain Python"),
    ("# spoiler: answers exercise 99.1\n!ls", "not plain Python"),
    ("# spoiler: answers exercise 99.1\nfrom __future__ import annotations", "without changing what it does"),
    ("# spoiler: answers exercise 99.1\n# only comments", "no code to gate"),
])
def test_gate_refuses_what_it_cannot_indent_safely(text, message):
    with pytest.raises(GateError, match=message):
        gate(text, "99.1")


def test_a_later_cell_may_not_read_what_a_gated_cell_set():
    nb = fixture_chapter()
    nb.cells[9].source = "print(shown(2))"
    with pytest.raises(GateError, match="a later cell reads shown"):
        make_learner_copy(nb)
    nb.cells[9].source = "def shown(n):\n    return n\nprint(shown(2))"  # set again first: fine
    make_learner_copy(nb)


def test_a_gate_needs_a_known_exercise_and_check_imported_before_it():
    nb = fixture_chapter()
    nb.cells[2].source = "# spoiler: answers exercise 99.7\nprint(1)"
    with pytest.raises(GateError, match="names exercise 99.7, which this chapter does not have"):
        check_gate_is_safe(nb.cells, 2, ["99.1"])
    nb.cells[1].source = "import helpers.checks"
    nb.cells[2].source = BEFORE
    with pytest.raises(GateError, match="import `from helpers.checks import check`"):
        check_gate_is_safe(nb.cells, 2, ["99.1"])


def test_the_build_refuses_a_gated_cell_whose_last_value_ipython_would_display():
    solution = fixture_chapter()
    solution.cells[7].outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "42"},
                                                        execution_count=1)]
    learner = make_learner_copy(solution)
    assert build.displayed_values_of_gated_cells(solution, learner) == [solution.cells[7].id]
    solution.cells[7].outputs = [nbformat.v4.new_output("stream", name="stdout", text="42\n")]
    assert build.displayed_values_of_gated_cells(solution, learner) == []
