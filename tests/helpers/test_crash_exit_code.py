"""One crash exit code (17): helpers.processes.CRASH_EXIT_CODE, imported wherever a child crashes on purpose."""

from __future__ import annotations

import io
import re
import tokenize

from course.layout import HELPERS
from helpers import durability_experiments, fare_lookup_graphs, processes
from helpers.ledger import service as ledger_service

# a literal 17 used as the crash code: os._exit(17), code != 17, (0, 17), NAME = 17
LITERAL = re.compile(r"_exit\(17\)|[!=]=\s*17\b|\(0, 17\)|^[A-Z_]+\s*=\s*17\b", re.MULTILINE)
# chapter 08 shows its own constant in a cell (saved as helpers.durability_experiments.CRASH_EXIT_CODE):
# a saved definition stays identical to its cell, so it cannot import the shared one
SHOWN = {"durability_experiments.py": "CRASH_EXIT_CODE = 17"}


def code_only(text: str) -> str:
    """``text`` with its strings and comments blanked (prose may say "exits with 17")."""
    lines = text.splitlines(keepends=True)
    for tok in reversed(list(tokenize.generate_tokens(io.StringIO(text).readline))):
        if tok.type in (tokenize.STRING, tokenize.COMMENT) and tok.start[0] == tok.end[0]:
            row = tok.start[0] - 1
            lines[row] = lines[row][:tok.start[1]] + "''" + lines[row][tok.end[1]:]
        elif tok.type == tokenize.STRING:  # a multi-line string (a docstring)
            first, last = tok.start[0] - 1, tok.end[0] - 1
            lines[first:last + 1] = [lines[first][:tok.start[1]] + "''" + lines[last][tok.end[1]:]]
    return "".join(lines)


def test_every_crash_exit_code_is_the_one_constant():
    assert processes.CRASH_EXIT_CODE == 17
    assert fare_lookup_graphs.CRASH_EXIT_CODE is processes.CRASH_EXIT_CODE
    assert ledger_service.DISPATCH_CRASH_EXIT is processes.CRASH_EXIT_CODE
    assert durability_experiments.CRASH_EXIT_CODE == processes.CRASH_EXIT_CODE


def test_no_module_spells_the_crash_code_as_a_literal():
    found = []
    for path in sorted(HELPERS.rglob("*.py")):
        if path.name == "processes.py" or "checks" in path.relative_to(HELPERS).parts:
            continue
        text = code_only(path.read_text(encoding="utf-8")).replace(SHOWN.get(path.name, "\0"), "")
        found += [f"{path.relative_to(HELPERS)}: {m.group(0)}" for m in LITERAL.finditer(text)]
    assert not found, f"use helpers.processes.CRASH_EXIT_CODE: {found}"
