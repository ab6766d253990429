"""The bar plot of chapter 08: median cost of one ``invoke`` per durability mode.

nbval does not compare images, so :func:`plot_cost_bars` prints the numbers it draws (the
same rows :func:`helpers.durability_costs.summarize_costs` returns) before drawing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from .text_tables import format_table

MODE_COLORS = {"sync": "#4c72b0", "async": "#55a868", "exit": "#c44e52"}


def plot_cost_bars(rows: Sequence[dict[str, Any]], *, title: str = "Cost of one invoke on SQLite",
                   value: str = "median ms", ratio: str = "ratio to sync", ax: Axes | None = None) -> Axes:
    """Print ``rows`` as a table, then draw one bar per row (``value``) labelled with ``ratio``.

    Returns the matplotlib Axes; the caller ends the cell with ``plt.show()``.
    """
    rows = list(rows)
    print(format_table(rows))
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3))
    modes = [str(r["mode"]) for r in rows]
    values = [float(r[value]) for r in rows]
    bars = ax.bar(modes, values, color=[MODE_COLORS.get(m, "#8172b2") for m in modes], width=0.6)
    for bar, row in zip(bars, rows, strict=True):
        label = f"{row[value]:.2f} ms" + (f"\n×{row[ratio]:.2f}" if ratio in row else "")
        ax.annotate(label, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom",
                    fontsize=9, xytext=(0, 2), textcoords="offset points")
    ax.set_ylabel("ms per invoke (median)")
    ax.set_xlabel("durability mode")
    ax.set_title(title)
    ax.set_ylim(0, max(values + [0.0]) * 1.35 or 1.0)
    ax.spines[["top", "right"]].set_visible(False)
    ax.figure.tight_layout()
    return ax
