"""The layout tells the architecture: helpers/ is what chapters import, course/ is the kit's machinery."""

import ast
import functools
import re

import pytest

from course.layout import HELPERS, ROOT
from course.notebook_format import source
from tests.conftest import SOLUTIONS, read

PACKAGES = ("helpers", "course")
MAX_LINES = 500


def python_files(package):
    return sorted((ROOT / package).rglob("*.py"))


def imported_modules(text):
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def test_nothing_a_learner_runs_imports_the_kits_machinery():
    offenders = [str(p.relative_to(ROOT)) for p in python_files("helpers")
                 if any(m == "course" or m.startswith("course.") for m in imported_modules(p.read_text()))]
    for path in SOLUTIONS:
        for cell in read(path).cells:
            # code strings for child processes count too: they run in the learner's environment
            if cell.cell_type == "code" and re.search(r"^\s*(from|import)\s+course\b", source(cell), re.MULTILINE):
                offenders.append(f"{path.name} {cell.id}")
    assert not offenders, f"helpers/ and chapters must not import course/: {offenders}"


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_is_oversized(package):
    big = {str(p.relative_to(ROOT)): n for p in python_files(package)
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not big, f"split these modules (over {MAX_LINES} lines): {big}"


@functools.cache
def code_sources() -> dict[str, tuple[str, ...]]:
    """Chapter number -> the sources of its code cells; read once (the index test asks for every module)."""
    return {p.stem[:2]: tuple(source(c) for c in read(p).cells if c.cell_type == "code") for p in SOLUTIONS}


def chapters_using(module):
    pattern = re.compile(rf"\bhelpers\.{module}\b|from helpers import [\w, ()\n]*\b{module}\b")
    return sorted({number for number, sources in code_sources().items() if any(pattern.search(s) for s in sources)})


def helper_modules():
    names = {p.stem for p in HELPERS.glob("*.py") if p.stem != "__init__"}
    names |= {p.parent.name for p in HELPERS.glob("*/__init__.py")}
    return sorted(names)


INDEX_LINE = re.compile(r"^\s{4}(\w+)\s{2,}(—|(?:\d\d)(?:[ ,]+\d\d)*)\s{2,}\S", re.MULTILINE)


def test_helpers_index_names_the_chapters_that_use_each_module():
    import helpers

    index = {m: ([] if chapters == "—" else re.findall(r"\d\d", chapters))
             for m, chapters in INDEX_LINE.findall(helpers.__doc__ or "")}
    assert sorted(index) == helper_modules(), "helpers/__init__.py's index lists every module once"
    wrong = {m: (index[m], chapters_using(m)) for m in index if index[m] != chapters_using(m)}
    assert not wrong, f"index says / chapters really use: {wrong}"
