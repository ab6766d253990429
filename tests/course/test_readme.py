"""The README is the front door: two commands, a current course map, one repository slug."""

import re

from tests.conftest import ROOT, SOLUTIONS, read

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_quickstart_is_make_lab_and_make_test():
    block = README.split("## Quickstart", 1)[1].split("```", 2)[1]
    commands = [line.split("#")[0].strip() for line in block.splitlines()[1:] if line.strip()]
    assert commands == ["make lab", "make test"]


def test_course_map_lists_every_chapter_with_its_minutes():
    row = re.compile(r"^\| (\d\d) \| \[[^\]]+\]\((notebooks/[^)]+)\)[^\n]*\| (\d+) \|$", re.M)
    rows = {m.group(1): int(m.group(3)) for m in row.finditer(README)}
    for path in SOLUTIONS:
        course = read(path).metadata["course"]
        assert course["chapter"] in rows, f"README course map lacks chapter {course['chapter']}"
        assert rows[course["chapter"]] == course["minutes"], f"{path.stem}: README says {rows[course['chapter']]} min"
    for link in re.findall(r"\]\((notebooks/[^)]+\.ipynb)\)", README):
        if (ROOT / "solutions" / link.split("/")[1]).exists():
            assert (ROOT / link).exists(), link


def test_repository_slug_is_written_once():
    slugs = re.findall(r"mybinder\.org/v2/gh/([^/]+/[^/]+)/", README)
    assert len(slugs) == 1
    assert "urlpath=lab/tree/notebooks/00_start_here.ipynb" in README
