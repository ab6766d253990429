"""The cells the build writes: the solutions banner and the chapter links (issue 23, items 7 and 8)."""

from __future__ import annotations

import shutil

import nbformat
import pytest

from course import generated_cells
from course.generated_cells import (
    BANNER,
    NAV,
    GeneratedCellError,
    chapter_title,
    course_map_link,
    heading_anchor,
    links,
    regenerate,
    strip_handwritten_next,
)
from course.layout import chapters
from course.learner_copies import make_learner_copy
from course.notebook_format import annotate, generated_kind, source
from tests.conftest import NOTEBOOKS, ROOT, SOLUTIONS, read

README = ROOT / "README.md"


def readme_anchors() -> set[str]:
    return {heading_anchor(line.lstrip("#")) for line in README.read_text(encoding="utf-8").splitlines()
            if line.startswith("#")}


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_a_solution_opens_with_the_banner_and_links_the_learner_copy(path):
    cells = read(path).cells
    banner = cells[0]
    assert generated_kind(banner) == BANNER, "the banner is the first cell, the first thing on screen"
    assert banner.cell_type == "markdown" and len(source(banner).splitlines()) == 1
    assert "solutions copy" in source(banner) and "every exercise is solved" in source(banner)
    [(label, target)] = links(source(banner))
    assert target == f"../notebooks/{path.name}" and (path.parent / target).resolve() == ROOT / "notebooks" / path.name
    assert (path.parent / target).exists()
    assert [generated_kind(c) for c in cells].count(BANNER) == 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_learner_copy_has_no_banner(path):
    cells = read(path).cells
    assert not [c for c in cells if generated_kind(c) == BANNER]
    assert not any("solutions copy" in source(c) for c in cells if c.cell_type == "markdown")
    assert source(cells[0]).startswith(f"# {path.stem[:2]} · ")


@pytest.mark.parametrize("path", SOLUTIONS + NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_chapter_ends_with_links_to_its_neighbours_and_the_course_map(path):
    cells = read(path).cells
    nav = cells[-1]
    assert generated_kind(nav) == NAV and [generated_kind(c) for c in cells].count(NAV) == 1
    found = dict((target, label) for label, target in links(source(nav)))
    order = chapters(path.parent)
    at = [p.name for p in order].index(path.name)
    expected = [p for p in (order[at - 1] if at else None, order[at + 1] if at + 1 < len(order) else None) if p]
    for neighbour in expected:
        assert found.pop(neighbour.name) == chapter_title(read(neighbour)), f"link text of {neighbour.name}"
        assert (path.parent / neighbour.name).exists()
    if at + 1 < len(order):
        assert f"**Next:** [{chapter_title(read(order[at + 1]))}]({order[at + 1].name})" in source(nav)
    else:
        assert "last chapter" in source(nav)
    [(target, _)] = found.items()  # what is left is the course map
    readme, _, anchor = target.partition("#")
    assert (path.parent / readme).resolve() == README and anchor in readme_anchors()
    # the hand-written line of the old skeleton is gone
    assert not any(line.startswith("Next:") for c in cells[:-1] if c.cell_type == "markdown"
                   for line in source(c).splitlines())


def test_the_course_map_link_names_a_readme_heading(tmp_path):
    assert course_map_link() == "../README.md#course-map"
    assert heading_anchor("Course map") in readme_anchors()
    other = tmp_path / "README.md"
    other.write_text("# Title\n\n## Chapters\n")
    with pytest.raises(GeneratedCellError, match="no heading 'Course map'"):
        course_map_link(other)


def _bare(nb):
    """``nb`` as a content branch may hand it over: no generated cells, a hand-written Next line."""
    bare = nbformat.from_dict(nb)
    bare.cells = [c for c in bare.cells if not generated_kind(c)]
    bare.cells[-1].source = source(bare.cells[-1]) + "\n\nNext: [chapter 99, more](99_more.ipynb): and then\nsome."
    return bare


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_the_build_writes_the_cells_again_in_place(path):
    stored = read(path)
    again = annotate(regenerate(read(path), path), path.stem)
    assert [(c.id, source(c), c.metadata) for c in again.cells] == [(c.id, source(c), c.metadata) for c in stored.cells]
    rebuilt = annotate(regenerate(_bare(stored), path), path.stem)  # a version without them gets them back
    assert [(c.id, source(c), c.metadata) for c in rebuilt.cells] == [(c.id, source(c), c.metadata)
                                                                      for c in stored.cells]


def test_a_new_chapter_gets_links_without_editing_anything(tmp_path):
    folder = tmp_path / "solutions"
    folder.mkdir()
    for path in SOLUTIONS[-2:]:
        shutil.copy(path, folder / path.name)
    new = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 98 · A new appendix\n\nWhy.")])
    nbformat.write(new, folder / "98_new_appendix.ipynb")
    last = SOLUTIONS[-1]
    assert last.name < "98_new_appendix.ipynb"
    built = regenerate(read(folder / "98_new_appendix.ipynb"), folder / "98_new_appendix.ipynb")
    nav = source(built.cells[-1])
    assert f"**Previous:** [{chapter_title(read(last))}]({last.name})" in nav and "last chapter" in nav
    before = regenerate(read(folder / last.name), folder / last.name)
    assert "**Next:** [98 · A new appendix](98_new_appendix.ipynb)" in source(before.cells[-1])
    assert source(built.cells[0]) == generated_cells.banner_text(folder / "98_new_appendix.ipynb")
    assert "(../notebooks/98_new_appendix.ipynb)" in source(built.cells[0])
    learner = make_learner_copy(annotate(built, "98_new_appendix"))
    assert [generated_kind(c) for c in learner.cells] == [None, NAV]


@pytest.mark.parametrize("text,expected", [
    ("Key points.\n\nNext: [chapter 07, interrupts](07_interrupts.ipynb).", "Key points."),
    ("Key points.\n\nNext: [chapter 02](02_x.ipynb): what a checkpoint\nholds.\n", "Key points."),
    ("- a point\n\n**Read more:** [a](b),\n[c](d).\nNext: [chapter 16](16_x.ipynb), the capstone,\nserved too.",
     "- a point\n\n**Read more:** [a](b),\n[c](d)."),
    ("Read more: [a](b).\nThis is the last chapter: the README's course map shows where to go back to.",
     "Read more: [a](b)."),
    ("Key points.\n\nNext: [a](b.ipynb)\n\nA paragraph after it stays, and so does the Next line.", None),
    ("Key points.\n\nNext time, read the docs.\n\nMore.", None),
    ("Key points. Next: [a](b.ipynb)", None),
])
def test_a_handwritten_next_paragraph_at_the_end_is_removed(text, expected):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 99 · T"),
                                         nbformat.v4.new_markdown_cell(text)])
    strip_handwritten_next(nb)
    assert source(nb.cells[-1]) == (expected if expected is not None else text)


def test_a_chapter_without_a_title_cell_stops_the_build():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("Chapter without a title")])
    with pytest.raises(GeneratedCellError, match="title"):
        regenerate(nb, SOLUTIONS[0])


def test_relink_rewrites_only_stale_link_cells_of_both_copies(tmp_path):
    from course import build

    solutions, notebooks = tmp_path / "solutions", tmp_path / "notebooks"
    solutions.mkdir()
    notebooks.mkdir()
    first, second = SOLUTIONS[0], SOLUTIONS[1]
    for path in (first, second):
        shutil.copy(path, solutions / path.name)
        shutil.copy(NOTEBOOKS[SOLUTIONS.index(path)], notebooks / path.name)
    assert set(build.relink([solutions / second.name])) == {solutions / second.name, notebooks / second.name}, \
        "the copied chapter is now the last one: its Next link is stale in both copies"
    texts = build.relink([solutions / first.name])
    assert texts == {}, "the first chapter's neighbour did not change"
    stale = build.relink([solutions / second.name])
    for path, text in stale.items():
        path.write_text(text, encoding="utf-8")
        new = nbformat.reads(text, as_version=4)
        old = read(second if path.parent == solutions else NOTEBOOKS[1])
        assert [c for c in new.cells if not generated_kind(c)] == [c for c in old.cells if not generated_kind(c)]
        assert "**This is the last chapter.**" in source(new.cells[-1])
    assert build.relink([solutions / second.name]) == {}


def test_the_committed_links_are_current():
    from course import build

    assert build.relink(chapters()) == {}, "run python -m course.build --relink"
