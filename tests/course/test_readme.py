"""The README is the front door: two commands, a current course map, one repository slug."""

import re
import subprocess

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


def quarter_hours(minutes: int) -> str:
    """495 -> '8¼': the hours, rounded to the nearest quarter, as the README writes them."""
    whole, quarters = divmod(round(minutes / 15), 4)
    return f"{whole}{['', '¼', '½', '¾'][quarters]}"


def test_core_path_total_is_the_sum_of_the_core_chapters():
    core = [read(p).metadata["course"] for p in SOLUTIONS]
    core = [c for c in core if "(appendix)" not in c["title"]]
    total = sum(c["minutes"] for c in core)
    match = re.search(r"Chapters (\d\d)–(\d\d) are the core path \((\d+) minutes, about (\S+) hours", README)
    assert match, "README lacks 'Chapters 00–NN are the core path (N minutes, about H hours'"
    assert (match.group(1), match.group(2)) == (core[0]["chapter"], core[-1]["chapter"])
    assert int(match.group(3)) == total, f"README says {match.group(3)} minutes, the core chapters add up to {total}"
    assert match.group(4) == quarter_hours(total)


def test_repository_slug_is_written_once():
    slugs = re.findall(r"mybinder\.org/v2/gh/([^/]+/[^/]+)/", README)
    assert len(slugs) == 1
    assert "urlpath=lab/tree/notebooks/00_start_here.ipynb" in README


def test_layout_table_names_every_top_level_folder_and_nothing_else():
    """The README's "How the kit is organised" table matches the folders in the repository."""
    table = README.split("## How the kit is organised", 1)[1].split("\n\n", 2)[1]
    named = {name.rstrip("/") for name in re.findall(r"`([^`]+/)`", table)}
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    folders = {line.split("/", 1)[0] for line in tracked.splitlines() if "/" in line}
    assert named == folders, \
        f"README names {sorted(named - folders)}, which do not exist; misses {sorted(folders - named)}"
