"""course.notebook_format.normalize keeps notebook and cell metadata by allow-list (nbdev's clean_nb)."""

from __future__ import annotations

import json

import nbformat
import pytest

from course.layout import NOTEBOOKS, SOLUTIONS, chapters
from course.notebook_format import CELL_METADATA, NOTEBOOK_METADATA, normalize


def test_only_allowed_metadata_keys_survive():
    nb = nbformat.v4.new_notebook()
    nb.metadata.update({"course": {"chapter": "42"}, "widgets": {"state": {}}, "jupytext": {"formats": "ipynb"},
                        "vscode": {"interpreter": {}}, "toc": {}})
    code = nbformat.v4.new_code_cell("print(1)")
    code.metadata.update({"tags": ["nbval-ignore-output"], "course": {"role": "check", "exercise": "42.1"},
                          "execution": {"iopub.status.busy": "now"}, "ExecuteTime": {}, "collapsed": True,
                          "scrolled": True, "jupyter": {"source_hidden": True}, "lines_to_next_cell": 2,
                          "editable": False, "some_new_editor_key": 1})
    text = nbformat.v4.new_markdown_cell("# 42 · Title")
    text.metadata.update({"course": {"generated": "banner"}, "slideshow": {"slide_type": "slide"}})
    nb.cells = [text, code]
    normalize(nb)
    assert sorted(nb.metadata) == sorted(NOTEBOOK_METADATA) and nb.metadata["course"] == {"chapter": "42"}
    assert code.metadata == {"tags": ["nbval-ignore-output"], "course": {"role": "check", "exercise": "42.1"}}
    assert text.metadata == {"course": {"generated": "banner"}}


@pytest.mark.parametrize("folder", [SOLUTIONS, NOTEBOOKS], ids=["solutions", "notebooks"])
def test_committed_notebooks_carry_only_allowed_metadata(folder):
    extra = []
    for path in chapters(folder):
        nb = json.loads(path.read_text(encoding="utf-8"))
        extra += [f"{path.name}: notebook metadata {k!r}" for k in nb["metadata"] if k not in NOTEBOOK_METADATA]
        extra += [f"{path.name} cell {i}: metadata {k!r}" for i, cell in enumerate(nb["cells"])
                  for k in cell.get("metadata", {}) if k not in CELL_METADATA]
    assert not extra, ("not on the allow-list in course/notebook_format.py (run python -m course.build --restamp, "
                       f"or add the key there if the build needs it): {extra}")
