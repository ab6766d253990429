"""Every chapter survives the round trip through the percent-script view unchanged."""

import pytest

from tests.conftest import SOLUTIONS, read
from course.notebook_format import annotate, source
from course.percent_format import PercentFormatError, from_percent, main, to_percent


def shape(nb):
    return [(c.cell_type, source(c), c.metadata.get("tags", [])) for c in nb.cells]


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_round_trip_keeps_every_cell(path):
    nb = read(path)
    back = from_percent(to_percent(nb))
    assert shape(back) == shape(nb)
    # and the build derives the same ids and course metadata from it
    assert [c.id for c in annotate(back, path.stem).cells] == [c.id for c in nb.cells]


def test_a_header_inside_a_cell_is_refused():
    nb = from_percent("# %%\nx = 1\n")
    nb.cells[0].source = "x = 1\n# %%\ny = 2"
    with pytest.raises(PercentFormatError):
        to_percent(nb)


def test_cli_import_keeps_metadata_and_reports(tmp_path, capsys):
    target = tmp_path / "42_demo.ipynb"
    script = tmp_path / "demo.py"
    script.write_text('# %% [markdown]\n# # 42 · Demo\n#\n# text\n\n# %% tags=["raises-exception"]\n1 / 0\n')
    assert main(["import", str(script), str(target)]) == 0
    assert "make build CHAPTERS=42" in capsys.readouterr().out
    assert main(["export", str(target)]) == 0
    assert capsys.readouterr().out == script.read_text()
    assert main(["import", str(tmp_path / "missing.py"), str(target)]) == 1
