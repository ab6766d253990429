"""How course notebooks are laid out, and how their stored form is kept deterministic.

Conventions every chapter follows (solutions/ is the source, notebooks/ is generated):

* an exercise cell holds its answer between ``### BEGIN SOLUTION`` and ``### END SOLUTION``;
* the check cell right after it calls ``check("NN.k", ...)``;
* a cell tagged ``solution`` (e.g. a worked explanation) exists only in solutions/;
* a cell whose output nbval must not compare starts with ``# nbval-ignore-output: <reason>``;
* the first code cell is the setup cell (imports), which the benchmark times separately;
* a cell with ``course.generated`` metadata is written by the build (the solutions banner,
  the chapter links): edit :mod:`course.generated_cells`, not the cell.

The build writes cell metadata ``course.role`` (setup / exercise / check) and
``course.exercise``, and notebook metadata ``course`` (chapter, slug, title, minutes,
exercises), which the grader and the progress report read.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import nbformat

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
CHECK_CALL = re.compile(r"""\bcheck\(\s*["'](\d\d\.\d+)["']""")
IGNORE_MARKER = "# nbval-ignore-output:"
GENERATED = "generated"  # key in a cell's ``course`` metadata: the build writes this cell
MINUTES = re.compile(r"\*\*Time:?\*\*:?\s*(\d+)\s*min", re.IGNORECASE)
# Metadata by allow-list (nbdev's clean_nb): a stored notebook keeps only these keys, and
# whatever an editor or a tool adds (execution timings, ExecuteTime, collapsed, scrolled,
# jupyter.source_hidden, jupytext's lines_to_next_cell, widgets, vscode, colab...) goes.
# ``course`` is the build's own namespace (course.role, .exercise, .generated, the learner
# copy's .hidden_output and .folded_reveal; the chapter's metadata), kept whole.
NOTEBOOK_METADATA = ("kernelspec", "language_info", "course")
CELL_METADATA = ("tags", "course")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# What the course's kernel (course.stable_kernel) reports, stored as is: JupyterLab marks a
# notebook modified when the kernel's language_info is not deep-equal to the stored one.
# ipykernel's fields, with the version cut to major.minor so every machine agrees.
LANGUAGE_INFO = {
    "codemirror_mode": {"name": "ipython", "version": 3},
    "file_extension": ".py",
    "mimetype": "text/x-python",
    "name": "python",
    "nbconvert_exporter": "python",
    "pygments_lexer": "ipython3",
    "version": f"{sys.version_info.major}.{sys.version_info.minor}",
}


def generated_kind(cell: Any) -> str | None:
    """``"banner"`` or ``"nav"`` for a cell the build writes (:mod:`course.generated_cells`), else None."""
    course = cell.get("metadata", {}).get("course")
    kind = course.get(GENERATED) if isinstance(course, dict) else None
    return kind if isinstance(kind, str) and kind else None


def source(cell: Any) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def exercise_of_check(cell: Any) -> str | None:
    if cell.get("cell_type") != "code":
        return None
    match = CHECK_CALL.search(source(cell))
    return match.group(1) if match else None


def has_solution(cell: Any) -> bool:
    return cell.get("cell_type") == "code" and BEGIN in source(cell)


def chapter_metadata(nb: Any, slug: str) -> dict[str, Any]:
    """The ``course`` notebook metadata derived from the notebook's own cells."""
    title = next((source(c).lstrip("# ").splitlines()[0] for c in nb.cells
                  if c.cell_type == "markdown" and source(c).startswith("# ")), slug)
    minutes = next((int(m.group(1)) for c in nb.cells if c.cell_type == "markdown"
                    for m in [MINUTES.search(source(c))] if m), None)
    exercises = [e for c in nb.cells for e in [exercise_of_check(c)] if e]
    return {"chapter": slug[:2], "slug": slug, "title": title, "minutes": minutes, "exercises": exercises}


def annotate(nb: Any, slug: str) -> Any:
    """Derive cell ids and course roles; set notebook ``course`` metadata (in place).

    Ids are recomputed on every build (``setup``, ``exercise-01-2``, ``check-01-2``,
    ``cell-007``), so they never depend on who last edited the notebook. A cell the build
    generates (``course.generated``, e.g. the solutions banner) keeps its marker, gets the id
    ``course-<kind>`` and is not counted, so adding one renames no other cell.
    """
    first_code, number = True, 0
    for index, cell in enumerate(nb.cells):
        kind = generated_kind(cell)
        if kind:  # the build's own cells keep their marker; they do not shift the others' ids
            cell.metadata["course"], cell["id"] = {GENERATED: kind}, f"course-{kind}"
            continue
        cell.metadata.pop("course", None)
        cell["id"], number = f"cell-{number:03d}", number + 1
        if cell.cell_type != "code":
            continue
        if first_code:
            cell.metadata["course"], cell["id"], first_code = {"role": "setup"}, "setup", False
        exercise = exercise_of_check(cell)
        if exercise:
            tag = exercise.replace(".", "-")
            cell.metadata["course"], cell["id"] = {"role": "check", "exercise": exercise}, f"check-{tag}"
            previous = nb.cells[index - 1] if index else None
            if previous is not None and has_solution(previous):
                previous.metadata["course"] = {"role": "exercise", "exercise": exercise}
                previous["id"] = f"exercise-{tag}"
        if ignore_reason(cell):
            # nbval reads tags, not our reason-carrying comment
            tags = cell.metadata.setdefault("tags", [])
            if "nbval-ignore-output" not in tags:
                tags.append("nbval-ignore-output")
    nb.metadata["course"] = chapter_metadata(nb, slug)
    return nb


def coalesce_streams(outputs: list[Any]) -> list[Any]:
    """Merge consecutive stdout/stderr chunks: how a stream was flushed is not content."""
    merged: list[Any] = []
    for out in outputs:
        if (out.get("output_type") == "stream" and merged and merged[-1].get("output_type") == "stream"
                and merged[-1].get("name") == out.get("name")):
            merged[-1]["text"] = merged[-1]["text"] + out["text"]
        else:
            merged.append(out)
    return merged


def _keep_only(metadata: Any, allowed: tuple[str, ...]) -> None:
    for key in [k for k in metadata if k not in allowed]:
        del metadata[key]


def normalize(nb: Any) -> Any:
    """Drop what differs between runs and machines: timings, widget state, kernel details.

    Notebook and cell metadata keep only :data:`NOTEBOOK_METADATA` and :data:`CELL_METADATA`.
    """
    _keep_only(nb.metadata, NOTEBOOK_METADATA)
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {**LANGUAGE_INFO, "codemirror_mode": dict(LANGUAGE_INFO["codemirror_mode"])}
    for cell in nb.cells:
        _keep_only(cell.metadata, CELL_METADATA)
        if cell.cell_type == "code":
            outputs = []
            for out in coalesce_streams(cell.get("outputs", [])):
                out.get("metadata", {}).pop("execution", None)
                data = out.get("data")
                if data and WIDGET_VIEW in data:
                    # widget state is not stored, so a stored view could never render
                    data.pop(WIDGET_VIEW)
                    if not data:
                        continue
                outputs.append(out)
            cell["outputs"] = outputs
    return nb


def dumps(nb: Any) -> str:
    return nbformat.writes(nb, version=4) + "\n"


def ignored_by_nbval(cell: Any) -> bool:
    tags = set(cell.get("metadata", {}).get("tags", []))
    src = source(cell)
    return bool(tags & {"nbval-ignore-output", "nbval-skip", "skip-execution"}) or any(
        marker in src for marker in ("NBVAL_IGNORE_OUTPUT", "NBVAL_SKIP", IGNORE_MARKER))


def ignore_reason(cell: Any) -> str | None:
    """The reason written after ``# nbval-ignore-output:``, or None."""
    for line in source(cell).splitlines():
        if line.strip().startswith(IGNORE_MARKER):
            reason = line.strip()[len(IGNORE_MARKER):].strip()
            return reason or None
    return None
