"""Edit a chapter as a plain Python script, then put it back (an authoring convenience).

    python -m course.percent_format export solutions/05_namespaces.ipynb > /tmp/05.py
    python -m course.percent_format import /tmp/05.py solutions/05_namespaces.ipynb
    make build CHAPTERS=05

solutions/*.ipynb stays the only source: the script is a temporary view of it, in the
"percent" format editors understand (``# %%`` starts a code cell, ``# %% [markdown]`` a
markdown cell whose lines start with ``# ``; tags as ``# %% tags=["raises-exception"]``).
Importing replaces the notebook's cells (outputs are dropped; the build re-creates them).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import nbformat

HEADER = re.compile(r'^# %%( \[markdown\])?(?: tags=(\[.*\]))?\s*$')


class PercentFormatError(ValueError):
    """A cell cannot be written as a percent script without changing its meaning."""


def to_percent(nb: nbformat.NotebookNode) -> str:
    """The notebook's cells as a percent-format script."""
    blocks = []
    for cell in nb.cells:
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        if any(HEADER.match(line) for line in source.splitlines()):
            raise PercentFormatError(f"cell {cell.get('id')} contains a line that looks like a cell header")
        tags = cell.metadata.get("tags", [])
        suffix = f" tags={json.dumps(tags)}" if tags else ""
        if cell.cell_type == "markdown":
            body = "\n".join(f"# {line}" if line else "#" for line in source.splitlines())
            blocks.append(f"# %% [markdown]{suffix}\n{body}")
        elif cell.cell_type == "code":
            blocks.append(f"# %%{suffix}\n{source}")
        else:
            raise PercentFormatError(f"cell {cell.get('id')} is a {cell.cell_type} cell; only code and markdown are supported")
    return "\n\n".join(blocks) + "\n"


def from_percent(text: str) -> nbformat.NotebookNode:
    """A notebook (no outputs, no ids yet: the build derives them) from a percent script."""
    cells: list[nbformat.NotebookNode] = []
    kind, tags, lines = None, [], []

    def flush() -> None:
        if kind is None:
            return
        body = "\n".join(lines).strip("\n")
        if kind == "markdown":
            body = "\n".join(l[2:] if l.startswith("# ") else l[1:] if l.startswith("#") else l
                             for l in body.splitlines())
            cell = nbformat.v4.new_markdown_cell(body)
        else:
            cell = nbformat.v4.new_code_cell(body)
        if tags:
            cell.metadata["tags"] = tags
        cells.append(cell)

    for line in text.splitlines():
        match = HEADER.match(line)
        if match:
            flush()
            kind = "markdown" if match.group(1) else "code"
            tags = json.loads(match.group(2)) if match.group(2) else []
            lines = []
        elif kind is not None:
            lines.append(line)
    flush()
    nb = nbformat.v4.new_notebook(cells=cells)
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index:03d}"  # placeholders; course.build recomputes every id
    return nb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    export = sub.add_parser("export", help="print a notebook as a percent script")
    export.add_argument("notebook", type=Path)
    imp = sub.add_parser("import", help="replace a notebook's cells with a percent script's")
    imp.add_argument("script", type=Path)
    imp.add_argument("notebook", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "export":
            sys.stdout.write(to_percent(nbformat.read(args.notebook, as_version=4)))
        else:
            nb = from_percent(args.script.read_text(encoding="utf-8"))
            if args.notebook.exists():
                nb.metadata = nbformat.read(args.notebook, as_version=4).metadata
            nbformat.write(nb, args.notebook)
            print(f"{args.notebook}: {len(nb.cells)} cells; now run `make build CHAPTERS={args.notebook.name[:2]}`")
    except (OSError, PercentFormatError, nbformat.ValidationError, json.JSONDecodeError) as exc:
        print(f"percent_format: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
