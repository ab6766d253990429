"""Where the course's files are: the one place that knows the repository layout.

Every command in :mod:`course` finds the solutions, the learner copies and the chapter
list through this module, so moving a folder means changing one line.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"
HELPERS = ROOT / "helpers"
CHECKS = HELPERS / "checks"
TESTS = ROOT / "tests"
REQUIREMENTS = ROOT / "requirements.txt"
SANITIZE = TESTS / "sanitize.cfg"
CHAPTER_GLOB = "[0-9][0-9]_*.ipynb"


def chapters(folder: Path = SOLUTIONS) -> list[Path]:
    """The chapter notebooks in ``folder`` (``NN_topic.ipynb``), in chapter order."""
    return sorted(Path(folder).glob(CHAPTER_GLOB))


def learner_path(solution_path: Path) -> Path:
    """The learner copy that the build makes from ``solution_path``."""
    return solution_path.parent.parent / NOTEBOOKS.name / solution_path.name


def shown(path: Path) -> str:
    """``path`` relative to the course root when it is inside it (for messages)."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)
