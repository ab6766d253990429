"""Plain-text tables: deterministic, diff-friendly output for notebooks under nbval."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def cell_text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (tuple, list, set, frozenset)):
        items = sorted(value) if isinstance(value, (set, frozenset)) else value
        return ",".join(cell_text(v) for v in items) or "()"
    return str(value)


def format_table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    """Rows of dicts as an aligned text table; ``columns`` picks and orders the keys."""
    rows = list(rows)
    if columns is None:
        columns = list(rows[0]) if rows else []
    body = [[cell_text(row.get(col)) for col in columns] for row in rows]
    widths = [max([len(col)] + [len(r[i]) for r in body]) for i, col in enumerate(columns)]
    lines = ["  ".join(col.ljust(w) for col, w in zip(columns, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in body]
    return "\n".join(lines)


def print_table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str] | None = None) -> None:
    print(format_table(rows, columns))
