"""The cells the build writes into every chapter: the solutions banner and the chapter links.

* **Banner** (``solutions/`` only, the first cell): one line saying that this is the
  solutions copy, with every exercise solved, and linking the learner copy. A browser tab
  shows only the file name, the same in both folders, so the banner is what tells them apart.
* **Chapter links** (both folders, the last cell): the previous chapter, the next chapter
  and the README's course map. They come from :func:`course.layout.chapters` and each
  chapter's title cell (``# NN · Name``), so a new or renamed chapter gets its links at the
  next build, and nothing here knows how many chapters there are.

Both are marked ``course.generated = "banner" | "nav"`` in their metadata. :func:`regenerate`
removes every generated cell and writes them again, so the build is idempotent, and a
solution edited elsewhere (say, a content branch written before these cells existed) gets
them back at the next build. A hand-written ``Next: [...]`` line at the end of a chapter (the
old skeleton; also "This is the last chapter ...") is removed, with the rest of its
paragraph: the links cell replaces it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import nbformat

from .layout import NOTEBOOKS, ROOT, chapters
from .notebook_format import GENERATED, generated_kind, source

BANNER, NAV = "banner", "nav"
README = ROOT / "README.md"
COURSE_MAP_HEADING = "Course map"  # the README section that lists every chapter
BANNER_TEXT = ("**This is the solutions copy: every exercise is solved here.** Your own work goes in "
               "[{folder}/{name}](../{folder}/{name}).")
TITLE = re.compile(r"^# (\d\d · .+?)\s*$", re.MULTILINE)
# the old skeleton's last line(s): "Next: [chapter 07, ...](07_x.ipynb)." or "This is the last chapter: ..."
HANDWRITTEN_NEXT = re.compile(r"(?:\A|\n)(?:Next: |This is the last chapter)[^\n]*(?:\n(?!\n)[^\n]*)*\s*\Z")


class GeneratedCellError(ValueError):
    """The build cannot write a chapter's generated cells (the message says why)."""


def heading_anchor(heading: str) -> str:
    """The anchor GitHub (and most Markdown renderers) give a heading: ``Course map`` -> ``course-map``."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def course_map_link(readme: Path = README) -> str:
    """``../README.md#course-map``: the README's course map, as a link from a chapter folder."""
    try:
        headings = [line.lstrip("#").strip() for line in readme.read_text(encoding="utf-8").splitlines()
                    if re.match(r"^#{1,6} ", line)]
    except OSError as exc:
        raise GeneratedCellError(f"cannot read {readme.name} for the course map link: {exc}") from exc
    if COURSE_MAP_HEADING not in headings:
        raise GeneratedCellError(f"{readme.name} has no heading {COURSE_MAP_HEADING!r}: the chapter links point at it")
    return f"../{readme.name}#{heading_anchor(COURSE_MAP_HEADING)}"


def chapter_title(nb: Any) -> str | None:
    """``"06 · Pending writes"``, from the title cell (the first markdown cell starting ``# NN · ``)."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown" and not generated_kind(cell):
            match = TITLE.match(source(cell))
            return match.group(1) if match else None
    return None


def title_of(path: Path) -> str:
    """The title of the chapter at ``path`` (read as plain JSON: cheap for a neighbour)."""
    try:
        title = chapter_title(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, AttributeError, TypeError) as exc:  # not JSON, or JSON but not a notebook
        raise GeneratedCellError(f"cannot read the title of {path.name} (to link to it): {exc}") from exc
    if title is None:
        raise GeneratedCellError(f"{path.name} has no title cell '# NN · Name' to link to")
    return title


def neighbours(path: Path) -> tuple[Path | None, Path | None]:
    """The chapters before and after ``path`` in :func:`course.layout.chapters` order."""
    paths = [p.name for p in chapters(path.parent)]
    if path.name not in paths:
        raise GeneratedCellError(f"{path.name} is not a chapter file (NN_topic.ipynb) of {path.parent.name}/")
    at = paths.index(path.name)
    before = path.parent / paths[at - 1] if at > 0 else None
    after = path.parent / paths[at + 1] if at + 1 < len(paths) else None
    return before, after


def nav_text(path: Path, readme: Path = README) -> str:
    """The chapter links of ``path``: next, previous, and the course map (links relative to the folder)."""
    before, after = neighbours(path)
    parts = [f"**Next:** [{title_of(after)}]({after.name})" if after else "**This is the last chapter.**"]
    if before:
        parts.append(f"**Previous:** [{title_of(before)}]({before.name})")
    parts.append(f"**All chapters:** [the course map]({course_map_link(readme)})")
    return "---\n\n" + " | ".join(parts)


def banner_text(path: Path) -> str:
    return BANNER_TEXT.format(folder=NOTEBOOKS.name, name=path.name)


def generated_cell(kind: str, text: str) -> Any:
    # built directly: nbformat.v4.new_markdown_cell validates each new cell, slowly
    return nbformat.from_dict({"cell_type": "markdown", "id": f"course-{kind}",
                               "metadata": {"course": {GENERATED: kind}}, "source": text})


def strip_handwritten_next(nb: Any) -> None:
    """Remove a ``Next: [...]`` line (and what follows it in its paragraph) ending the chapter (in place).

    Only at the very end of the last markdown cell: a "Next:" elsewhere is the author's.
    """
    written = [c for c in nb.cells if c.cell_type == "markdown" and not generated_kind(c)]
    if not written:
        return
    last = written[-1]
    text = source(last)
    stripped = HANDWRITTEN_NEXT.sub("", text)
    if stripped != text:
        last.source = stripped.rstrip("\n")


def regenerate(nb: Any, path: Path, readme: Path = README) -> Any:
    """``nb`` (the solution at ``path``) with its generated cells written afresh (in place).

    Raises :class:`GeneratedCellError` when a link cannot be made (no title cell, no course
    map heading in the README).
    """
    nb.cells = [c for c in nb.cells if not generated_kind(c)]
    strip_handwritten_next(nb)
    if chapter_title(nb) is None:
        raise GeneratedCellError("the first markdown cell is not a title '# NN · Name'")
    nb.cells.insert(0, generated_cell(BANNER, banner_text(path)))
    nb.cells.append(generated_cell(NAV, nav_text(path, readme)))
    return nb


def links(text: str) -> list[tuple[str, str]]:
    """``(label, target)`` of each Markdown link in ``text``."""
    return re.findall(r"\[([^\]]+)\]\(([^)\s]+)\)", text)
