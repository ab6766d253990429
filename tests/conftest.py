"""Shared fixtures: paths of the course and loaded notebooks."""

from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def read(path: Path):
    return nbformat.read(path, as_version=4)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
