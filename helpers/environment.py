"""The environment self-check shown in chapter 00: is this the environment the course pins?"""

from __future__ import annotations

import platform
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REQUIREMENTS = Path(__file__).resolve().parent.parent / "requirements.txt"
SHOWN = ("langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite", "langchain-core")
# Binder's base image brings its own JupyterLab (binder/requirements.txt leaves it out), and
# the server's version does not change what a kernel computes.
NOT_CHECKED = frozenset({"jupyterlab"})


def read_pins(path: Path = REQUIREMENTS) -> dict[str, str]:
    """The exact pins (``name==version``) of a requirements file, by canonical package name.

    Comments, blank lines and pip options (``-r``, ``--index-url``) are skipped; a line
    that pins no exact version (``>=``) is not a pin.
    """
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.split(" #", 1)[0].strip()
        if not text or text.startswith(("#", "-")):
            continue
        requirement = Requirement(text)
        exact = [spec.version for spec in requirement.specifier if spec.operator == "=="]
        if exact:
            pins[canonicalize_name(requirement.name)] = exact[0]
    return pins


def installed_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def environment_rows(pins: dict[str, str] | None = None) -> list[dict[str, str]]:
    """One row per pinned package: pinned version, installed version, and whether they match."""
    pins = read_pins() if pins is None else pins
    return [{"package": name, "pinned": version, "installed": installed_version(name) or "missing",
             "ok": "yes" if installed_version(name) == version else "NO"}
            for name, version in sorted(pins.items()) if name not in NOT_CHECKED]


def self_check() -> list[str]:
    """Lines for the self-check cell: Python, the LangGraph packages, and any mismatch."""
    rows = environment_rows()
    python = ".".join(platform.python_version_tuple()[:2])
    lines = [f"python {python}: " + ("ok" if python == "3.11" else "this course needs 3.11")]
    lines += [f"{r['package']} {r['installed']}" for r in rows if r["package"] in SHOWN]
    bad = [r for r in rows if r["ok"] != "yes"]
    if bad:
        lines += [f"MISMATCH {r['package']}: pinned {r['pinned']}, installed {r['installed']}" for r in bad]
        lines.append("Fix: run `make lab` from the course folder; it rebuilds .venv from requirements.txt.")
    else:
        unchecked = ", ".join(sorted(NOT_CHECKED))
        lines.append(f"all {len(rows)} checked pins of requirements.txt match (not checked: {unchecked})")
    return lines
