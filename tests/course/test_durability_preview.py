"""Chapters 06 and 07 use durability modes before chapter 08 teaches them, so each gives a
short preview box first. The box must agree with chapter 08's table word for word on what
each mode saves (issue 24, item 3)."""

import re

import pytest

from course.notebook_format import source
from tests.conftest import SOLUTIONS, read

MODE_ROW = re.compile(r'^\|\s*`"(sync|async|exit)"`\s*\|.*\|\s*$')


def _mode_rows(path, quoted: bool) -> list[str]:
    """The table rows for the three modes, in order, from the chapter's markdown cells."""
    rows = []
    for cell in read(path).cells:
        if cell.cell_type != "markdown":
            continue
        for line in source(cell).splitlines():
            if quoted != line.startswith(">"):
                continue
            line = line.lstrip("> ").rstrip() if quoted else line.rstrip()
            if MODE_ROW.match(line):
                rows.append(line)
    return rows


def _chapter(number: str):
    [path] = [p for p in SOLUTIONS if p.name.startswith(number + "_")]
    return path


@pytest.mark.parametrize("number", ["06", "07"])
def test_preview_box_agrees_with_chapter_08_word_for_word(number):
    table = _mode_rows(_chapter("08"), quoted=False)[:3]
    assert [row.split("|")[1].strip() for row in table] == ['`"sync"`', '`"async"`', '`"exit"`']
    assert _mode_rows(_chapter(number), quoted=True) == table
