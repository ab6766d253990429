"""helpers.durability_costs.plot_cost_bars: the bar plot prints the data it draws."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from helpers.durability_costs import plot_cost_bars  # noqa: E402

ROWS = [{"mode": "sync", "runs": 30, "median ms": 3.2, "ratio to sync": 1.0},
        {"mode": "async", "runs": 30, "median ms": 3.7, "ratio to sync": 1.16},
        {"mode": "exit", "runs": 30, "median ms": 1.2, "ratio to sync": 0.38}]


def test_plot_prints_its_data_and_draws_one_bar_per_mode(capsys):
    ax = plot_cost_bars(ROWS, title="t")
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["mode", "runs", "median", "ms", "ratio", "to", "sync"]
    assert out[2].split() == ["sync", "30", "3.2", "1.0"] and out[4].split() == ["exit", "30", "1.2", "0.38"]
    heights = [p.get_height() for p in ax.patches]
    assert heights == [3.2, 3.7, 1.2]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["sync", "async", "exit"]
    assert "×0.38" in [t.get_text() for t in ax.texts][2]
    plt.close(ax.figure)


def test_plot_onto_a_given_axes_without_ratio_column(capsys):
    fig, (left, right) = plt.subplots(1, 2)
    rows = [{"mode": "sync", "median ms": 2.0}, {"mode": "exit", "median ms": 0.5}]
    assert plot_cost_bars(rows, ax=right) is right
    assert len(right.patches) == 2 and not left.patches
    assert "×" not in "".join(t.get_text() for t in right.texts)
    plt.close(fig)
