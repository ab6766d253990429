"""The build pipeline: learner copies are current, leak nothing, and builds are fixed points."""

import json
import shutil

import nbformat
import pytest

from course import build
from course.learner_copies import (
    FOLDED_METADATA,
    HIDDEN_METADATA,
    REVEAL_SUMMARY,
    SolutionMarkupError,
    fold_reveal,
    hidden_output_reason,
    make_learner_copy,
    reveal_reason,
    reveal_summary,
    solution_lines,
    strip_solutions,
    stub_for,
)
from course.notebook_format import BEGIN, END, annotate, dumps, ignored_by_nbval, normalize, source
from tests.conftest import NOTEBOOKS, ROOT, SOLUTIONS, read


def test_there_are_chapters_in_both_folders():
    assert SOLUTIONS, "solutions/ has no chapters"
    assert [p.name for p in SOLUTIONS] == [p.name for p in NOTEBOOKS]


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_learner_copy_is_what_the_generator_makes_now(path):
    expected = make_learner_copy(annotate(read(path), path.stem))
    committed = read(ROOT / "notebooks" / path.name)
    assert committed.metadata["course"] == expected.metadata["course"]
    assert [(c.id, c.cell_type, source(c), c.metadata) for c in committed.cells] == \
           [(c.id, c.cell_type, source(c), c.metadata) for c in expected.cells], \
        "notebooks/ is stale: run `make build`"


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_no_solution_text_leaks_into_learner_copies(path):
    solution = read(path)
    secret = solution_lines(solution)
    if any(BEGIN in source(c) for c in solution.cells):
        assert secret, "a chapter with solution regions must have lines to protect"
    learner_text = "\n".join(source(c) for c in read(ROOT / "notebooks" / path.name).cells)
    assert BEGIN not in learner_text and END not in learner_text
    leaked = sorted(line for line in secret if line in learner_text)
    assert not leaked, f"solution lines visible in notebooks/{path.name}: {leaked[:3]}"


@pytest.mark.parametrize("path", SOLUTIONS + NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_committed_notebook_is_a_fixed_point_of_the_build(path):
    # The build writes dumps(normalize(...)) of executed notebooks; nbval proves the outputs
    # reproduce, and this proves the stored form does, so a second build changes nothing.
    text = path.read_text(encoding="utf-8")
    nb = nbformat.reads(text, as_version=4)
    if path.parent.name == "solutions":
        annotate(nb, path.stem)
    assert dumps(normalize(nb)) == text
    assert all("execution" not in c.metadata for c in nb.cells)
    assert "widgets" not in nb.metadata


def test_stub_rules():
    assert stub_for("answer = 6") == ["# Your code here: replace each ... with your answer.", "answer = ..."]
    assert stub_for("a, b = 1, 2")[1:] == ["a = ...", "b = ..."]
    lines = stub_for('def f(x: int) -> int:\n    """Double x."""\n    return 2 * x')
    assert lines[1] == "def f(x: int) -> int:" and "return ...  # your code here" in lines[-1]
    assert "2 * x" not in "\n".join(lines)
    assert stub_for("return x + 1", "    ")[-1] == "    return ..."
    assert stub_for("print('hi')")[-1] == "pass"


def test_strip_solutions_keeps_the_rest_of_the_cell():
    text = f"x = 1\n{BEGIN}\nanswer = x + 1\n{END}\nprint(answer)"
    assert strip_solutions(text).splitlines() == ["x = 1", "# Your code here: replace each ... with your answer.",
                                                  "answer = ...", "print(answer)"]


@pytest.mark.parametrize("text", [f"{BEGIN}\nx = 1", f"x = 1\n{END}", f"{BEGIN}\n{BEGIN}\n{END}",
                                  f"{BEGIN}\nx = (\n{END}"])
def test_broken_markers_are_reported(text):
    with pytest.raises(SolutionMarkupError):
        strip_solutions(text)


def test_stub_runs_without_raising():
    text = f"def g(n):\n    '''doc'''\n    {BEGIN}\n    total = n * 2\n    return total\n    {END}\nresult = g(3)"
    namespace = {}
    exec(strip_solutions(text), namespace)
    assert namespace["result"] is Ellipsis


def _course_copy(tmp_path):
    for folder in ("solutions", "notebooks"):
        (tmp_path / folder).mkdir()
    shutil.copy(SOLUTIONS[0], tmp_path / "solutions" / SOLUTIONS[0].name)
    shutil.copy(NOTEBOOKS[0], tmp_path / "notebooks" / NOTEBOOKS[0].name)
    return tmp_path


@pytest.mark.parametrize("corruption", ["{not json", json.dumps({"cells": "nope"}),
                                        None], ids=["not-json", "not-a-notebook", "unclosed-solution"])
def test_corrupt_solution_stops_the_build_and_keeps_the_learner_copy(tmp_path, monkeypatch, capsys, corruption):
    course = _course_copy(tmp_path)
    bad = course / "solutions" / "99_broken.ipynb"
    if corruption is None:
        nb = read(SOLUTIONS[0])
        nb.cells.append(nbformat.v4.new_code_cell(f"{BEGIN}\nanswer = 1"))
        nbformat.write(nb, bad)
    else:
        bad.write_text(corruption)
    learner = course / "notebooks" / SOLUTIONS[0].name
    before = learner.read_bytes()
    monkeypatch.setattr(build, "SOLUTIONS", course / "solutions")
    assert build.main([]) == 1
    err = capsys.readouterr().err
    assert "99_broken.ipynb" in err and "build stopped" in err
    assert learner.read_bytes() == before
    assert not (course / "notebooks" / "99_broken.ipynb").exists()


def test_unknown_chapter_is_a_clear_error(capsys):
    assert build.main(["77"]) == 1
    assert "no chapter in solutions/ matches 77" in capsys.readouterr().err


def test_recorded_measurements_are_kept_unless_the_cell_changes(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("# nbval-ignore-output: timings\nprint(t)", id="m"),
                nbformat.v4.new_code_cell("print(1)", id="c")]
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="3.1 ms\n")]
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    path = tmp_path / "n.ipynb"
    path.write_text(dumps(nb))
    fresh = nbformat.reads(dumps(nb), as_version=4)
    fresh.cells[0].outputs[0]["text"] = "4.7 ms\n"
    fresh.cells[1].outputs[0]["text"] = "2\n"
    kept = nbformat.reads(build.keep_recorded_measurements(dumps(fresh), path), as_version=4)
    assert kept.cells[0].outputs[0]["text"] == "3.1 ms\n"   # the recorded measurement stays
    assert kept.cells[1].outputs[0]["text"] == "2\n"        # a compared output is always fresh
    fresh.cells[0].source += "  # edited"
    changed = nbformat.reads(build.keep_recorded_measurements(dumps(fresh), path), as_version=4)
    assert changed.cells[0].outputs[0]["text"] == "4.7 ms\n"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_learner_copies_store_no_answer_to_a_prediction_or_an_exercise(path):
    learner = read(path)
    solution = read(ROOT / "solutions" / path.name)
    hidden = [c for c in learner.cells if c.metadata.get("course", {}).get(HIDDEN_METADATA)]
    for cell in hidden:
        assert not cell.outputs and cell.execution_count is None, f"{cell.id} stores an answer"
        assert "nbval-ignore-output" in cell.metadata.get("tags", []), f"{cell.id}: nbval still runs it, unchecked"
    predictions = [i for i, _ in enumerate(solution.cells) if hidden_output_reason(solution.cells, i)]
    assert len(hidden) == len(predictions)
    # the only outputs nbval does not compare in notebooks/ are those hidden on purpose and
    # those the solution already ignores (with a reason)
    ignored_in_solution = {c.id for c in solution.cells if c.cell_type == "code" and ignored_by_nbval(c)}
    not_compared = {c.id for c in learner.cells if c.cell_type == "code" and ignored_by_nbval(c)}
    assert not_compared == ignored_in_solution | {c.id for c in hidden}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_text_that_reads_a_hidden_output_aloud_is_folded_in_the_learner_copy(path):
    learner = read(path)
    solution = read(ROOT / "solutions" / path.name)
    reads_aloud = {solution.cells[i + 1].id: reveal_summary(reveal_reason(solution.cells, i))
                   for i in range(len(solution.cells) - 1)
                   if reveal_reason(solution.cells, i) and solution.cells[i + 1].cell_type == "markdown"
                   and not source(solution.cells[i + 1]).startswith("#")}  # a heading first: nothing to fold
    folded = {c.id for c in learner.cells if c.metadata.get("course", {}).get(FOLDED_METADATA)}
    assert folded == set(reads_aloud)
    by_id = {c.id: c for c in solution.cells}
    for cell in learner.cells:
        if cell.id in folded:
            text, opening = source(cell), f"<details>\n{reads_aloud[cell.id]}\n\n"
            assert text.startswith(opening) and "\n\n</details>" in text, cell.id
            # nothing lost: the solution's text is all there, its headings outside the fold
            assert text.replace(opening, "").replace("\n\n</details>", "") == source(by_id[cell.id]).strip("\n")
            inside = text.split("\n\n</details>")[0]
            assert all(not line.startswith("#") for line in inside.splitlines()), cell.id
            # a lead-in ("Walk the chain from ...:") introduces the next cell: it must stay readable
            assert not inside.rstrip().endswith(":"), f"{cell.id}: move the lead-in to a cell of its own"


def _notebook_99(*cells: tuple[str, str]) -> nbformat.NotebookNode:
    """A chapter-99 notebook: its title cell, then ``cells`` as ("md" or "code", source) pairs."""
    make = {"md": nbformat.v4.new_markdown_cell, "code": nbformat.v4.new_code_cell}
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 99 · T")] + [make[kind](text) for kind, text in cells]
    return nb


def test_a_reveal_is_folded_up_to_its_first_heading():
    nb = _notebook_99(("md", "## Predict, then run: how many?"), ("code", "print(6)"),
                      ("md", "Six, not two.\n\n## Next section\nMore."), ("code", "print(7)"),
                      ("md", "Not after a prediction."))
    learner = make_learner_copy(annotate(nb, "99_t"))
    assert source(learner.cells[3]) == (f"<details>\n{REVEAL_SUMMARY}\n\nSix, not two.\n\n</details>\n\n"
                                        "## Next section\nMore.")
    assert learner.cells[3].metadata["course"][FOLDED_METADATA] is True
    assert source(learner.cells[5]) == "Not after a prediction."
    assert make_learner_copy(annotate(nb, "99_t")).cells[3].source == learner.cells[3].source  # same every build
    code = "Notice:\n\n```python\n# a comment, not a heading\nx = 1\n```\n\n## Next"
    assert fold_reveal(code) == f"<details>\n{REVEAL_SUMMARY}\n\n{code[:-9]}\n\n</details>\n\n## Next"
    setext = "Six.\n\nNext section\n------------\nMore."
    assert fold_reveal(setext) == f"<details>\n{REVEAL_SUMMARY}\n\nSix.\n\n</details>\n\n{setext[6:]}"


def test_a_fold_after_a_spoiler_names_what_it_answers():
    nb = _notebook_99(("code", "from helpers.checks import check"),
                      ("code", "# spoiler: answers exercise 99.1\nprint(42)"), ("md", "42, because ..."),
                      ("md", "### Exercise 99.1"), ("code", f"{BEGIN}\nanswer = 42\n{END}"),
                      ("code", 'check("99.1", answer)'),
                      ("code", "# spoiler: answers the prediction above\nprint(6)"), ("md", "6, because ..."))
    learner = make_learner_copy(annotate(nb, "99_t"))
    assert source(learner.cells[3]) == ("<details>\n<summary><b>Spoiler:</b> this answers exercise 99.1. Open it once "
                                        "you have tried that yourself.</summary>\n\n42, because ...\n\n</details>")
    assert source(learner.cells[8]) == ("<details>\n<summary><b>Spoiler:</b> this answers the prediction above. "
                                        "Open it once you have tried that yourself.</summary>\n\n6, because ..."
                                        "\n\n</details>")


def test_a_prediction_cell_and_a_prediction_spoiler_lose_their_output_in_the_learner_copy():
    nb = _notebook_99(("md", "## Predict, then run: how many?"), ("code", "from helpers.checks import check\nprint(6)"),
                      ("code", "print('not hidden')"), ("code", "# spoiler: answers the prediction above\nprint(42)"),
                      ("md", "### Exercise 99.1: predict, then run"), ("code", f"{BEGIN}\nanswer = 42\n{END}"),
                      ("code", 'check("99.1", answer)'), ("code", "# spoiler: answers exercise 99.1\nprint(42)"))
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output("stream", text="x\n")]
    learner = build.hide_outputs(make_learner_copy(annotate(nb, "99_t")))
    hidden = [c.cell_type == "code" and bool(c.metadata.get("course", {}).get(HIDDEN_METADATA)) for c in learner.cells]
    assert hidden == [False, False, True, False, True, False, True, False, False]
    assert learner.cells[4].metadata["course"][HIDDEN_METADATA] == "spoiler: answers the prediction above"
    # a spoiler of an exercise is gated instead (tests/course/test_run_all.py), and keeps its output
    assert learner.cells[8].metadata["course"] == {"gated_by": "99.1"} and learner.cells[8].outputs == []
