"""The grader runs only the cells a grade depends on (course.grade.slicing), and grades the same.

The analysis is conservative: these tests pin what it keeps (bindings read now or later by a
kept cell, cells acting on the whole process) and what it drops (a server nobody reads). The
proof that real chapters grade the same is end to end: a chapter graded sliced and whole gives
the same rows, for right, wrong and missing answers, and for an answer that uses a name of the
lesson (tests/course/test_grade_chapters.py grades chapters 01 and 10 sliced, solutions and
learner copies).
"""

from __future__ import annotations

import nbformat
import pytest

from course import grade
from course.grade.rewriting import graded_notebook
from course.grade.slicing import CellNames, needed_cells
from course.layout import SOLUTIONS
from tests.course.grading_submissions import write


def code(source: str, role: str | None = None, exercise: str | None = None):
    cell = nbformat.v4.new_code_cell(source)
    if role:
        cell.metadata["course"] = {"role": role, **({"exercise": exercise} if exercise else {})}
    return cell


def kept(cells) -> list[str]:
    """The first line of every kept code cell, in order."""
    keep = needed_cells(cells)
    return None if keep is None else [cells[i].source.splitlines()[0] for i in sorted(keep)]


def test_names_bound_read_and_read_later():
    names = CellNames("import os\nx = 1\nif x:\n    y = 2\nfor i in range(3):\n    pass\n"
                      "def f(a):\n    return a + z\nwith open('f') as handle:\n    w = handle.read()\n")
    assert names.binds == {"os", "x", "y", "i", "f", "handle", "w"}
    assert names.kills == {"os", "x", "f", "handle", "w"}  # y and i are bound only on some paths
    assert "z" in names.late_reads and "a" not in names.late_reads  # a is f's parameter
    assert "z" not in names.reads and "range" not in names.reads  # builtins are nobody's binding
    assert not names.global_effect


@pytest.mark.parametrize("source", [
    'os.environ["KEY"] = "1"',          # the environment
    "helpers_module.FLAG = True",       # an attribute of an object bound in another cell
    "os.chdir('/tmp')",
    "warnings.simplefilter('ignore')",
    "%env KEY=1",                       # a magic
    "exec('x = 1')",
    "def f():\n    global counter\n    counter = 1",
])
def test_effects_no_name_shows_keep_the_cell(source):
    assert CellNames(source).global_effect


def test_a_mutation_of_the_cells_own_object_is_not_an_effect():
    assert not CellNames("rows = {}\nrows['a'] = 1\nclass C:\n    def set(self):\n        self.x = 1").global_effect


def test_a_star_import_or_broken_lesson_cell_keeps_the_whole_notebook():
    for lesson in ("from os import *", "def broken(:"):
        cells = [code("from helpers.checks import check", "setup"), code(lesson),
                 code("answer = 1", "exercise", "98.1"), code('check("98.1", answer)', "check", "98.1")]
        assert needed_cells(cells) is None


def test_a_server_nobody_reads_is_dropped_and_its_cleanup_too():
    cells = [code("from contextlib import ExitStack\nfrom helpers.checks import check", "setup"),
             code("resources = ExitStack()\npg = resources.enter_context(start_server())"),
             code("print(pg.url)"),
             code("def double(x):\n    return 2 * x", "exercise", "98.2"),
             code('check("98.2", double)', "check", "98.2"),
             code("resources.close()")]
    assert kept(cells) == ["from contextlib import ExitStack", "def double(x):", 'check("98.2", double)']


def test_what_an_answer_reads_is_kept_with_what_that_reads():
    cells = [code("from helpers.checks import check", "setup"),
             code("base = 40"),
             code("offset = base + 2"),
             code("unrelated = expensive()"),
             code("answer = offset", "exercise", "98.1"),
             code('check("98.1", answer)', "check", "98.1")]
    assert kept(cells) == ["from helpers.checks import check", "base = 40", "offset = base + 2", "answer = offset",
                           'check("98.1", answer)']


def test_a_rebinding_hides_the_earlier_one_unless_it_is_conditional():
    cells = [code("from helpers.checks import check", "setup"),
             code("graph = first()"), code("graph = second()"),
             code("answer = graph", "exercise", "98.1"), code('check("98.1", answer)', "check", "98.1")]
    assert kept(cells)[1:2] == ["graph = second()"]
    cells[2] = code("if flag:\n    graph = second()")
    assert kept(cells)[1:3] == ["graph = first()", "if flag:"]


def test_a_function_sees_the_binding_current_when_it_is_called():
    # double reads `factor` when a check calls it: each binding may be the current one then
    cells = [code("from helpers.checks import check", "setup"),
             code("factor = 1"),
             code("def double(x):\n    return factor * x", "exercise", "98.2"),
             code("factor = 2"),
             code('check("98.2", double)', "check", "98.2")]
    assert kept(cells) == ["from helpers.checks import check", "factor = 1", "def double(x):", "factor = 2",
                           'check("98.2", double)']


def test_an_answer_that_does_not_parse_is_kept_and_graded_as_it_is():
    cells = [code("from helpers.checks import check", "setup"), code("slow = server()"),
             code("answer = (", "exercise", "98.1"), code('check("98.1", answer)', "check", "98.1")]
    assert kept(cells) == ["from helpers.checks import check", "answer = (", 'check("98.1", answer)']


def test_the_graded_notebook_of_a_server_chapter_starts_no_server():
    """Chapter 14 starts PostgreSQL and uvicorn; its exercises need neither."""
    solution = SOLUTIONS / "14_persistent_service.ipynb"
    pristine = grade.pristine_learner_copy(solution)
    sliced, plan = graded_notebook(pristine, nbformat.read(solution, as_version=4))
    whole, _ = graded_notebook(pristine, nbformat.read(solution, as_version=4), whole=True)
    sources = "\n".join(c.source for c in sliced.cells if c.cell_type == "code")
    assert "postgres_server" not in sources and "uvicorn" not in sources
    assert "postgres_server" in "\n".join(c.source for c in whole.cells if c.cell_type == "code")
    assert sorted(plan.exercise_cell) == grade.exercise_ids(pristine)


def test_a_chapter_grades_the_same_sliced_and_whole(tmp_path):
    """Wrong, missing and right answers of chapters 00 and 01: the same rows either way. The right
    answer of 01.3 passes; that of 01.1 reads `reply`, bound by a lesson cell the slice keeps."""
    rows = {}
    for whole in (False, True):
        for name in ("00_start_here.ipynb", "01_threads.ipynb"):
            solution = nbformat.read(SOLUTIONS / name, as_version=4)
            exercise_cells = [c for c in solution.cells if c.metadata.get("course", {}).get("role") == "exercise"]
            if name.startswith("00"):
                exercise_cells[0].source = "kinds = {}"  # wrong
            else:
                exercise_cells[1].source = ""  # 01.2 missing: not attempted; 01.1 and 01.3 stay right
            path = write(tmp_path, f"{'whole' if whole else 'sliced'}-{name}", solution)
            graded = grade.grade_file(path, shown=name, whole=whole)
            rows[(whole, name)] = [(r.exercise, r.status, r.message) for r in graded.rows]
    for name in ("00_start_here.ipynb", "01_threads.ipynb"):
        assert rows[(False, name)] == rows[(True, name)]
    statuses = {status for (_, _), found in rows.items() for _, status, _ in found}
    assert {"failed", "not-attempted", "passed"} <= statuses
    assert ("01.1", "passed") in {(ex, status) for ex, status, _ in rows[(False, "01_threads.ipynb")]}
