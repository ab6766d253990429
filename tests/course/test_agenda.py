"""INSTRUCTORS.md agrees with the notebooks' own time estimates, and its agendas add up.

Every chapter in solutions/ must appear in the "Chapter timings" table with the minutes of
its ``**Time:**`` line (run ``python -m course.agenda --markdown`` for the rows). In each
agenda table (columns start | block | minutes) a chapter block lasts the chapter's minutes,
each start time is the previous start plus its minutes, and the total matches the
"(NNN minutes)" in the agenda's heading, when it has one.
"""

import re
from pathlib import Path

from course import agenda

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "INSTRUCTORS.md").read_text(encoding="utf-8")
TIMES = {t["chapter"]: t for t in agenda.chapter_times()}


def section(text: str, heading: str) -> str:
    start = text.index(heading)
    rest = text[start + len(heading):]
    end = re.search(r"^#{1,3} ", rest, re.MULTILINE)
    return rest[: end.start()] if end else rest


def table_rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.strip().startswith("|") and not set(line) <= set("|-: ")]


def agendas() -> list[tuple[str, list[list[str]]]]:
    found = []
    for match in re.finditer(r"^### (.+)$", GUIDE, re.MULTILINE):
        rows = table_rows(section(GUIDE, match.group(0)))
        if rows and rows[0] == ["start", "block", "minutes"]:
            found.append((match.group(1), rows[1:]))
    return found


def minutes_of(clock: str) -> int:
    hours, minutes = clock.split(":")
    return int(hours) * 60 + int(minutes)


def test_every_chapter_has_its_notebook_minutes():
    rows = {r[0]: r for r in table_rows(section(GUIDE, "## Chapter timings")) if re.fullmatch(r"\d\d", r[0])}
    assert TIMES, "no chapters in solutions/"
    for number, t in TIMES.items():
        assert number in rows, f"chapter {number} is missing from INSTRUCTORS.md's timings table"
        assert t["minutes"] is not None, f"chapter {number} has no **Time:** line"
        assert rows[number][2] == str(t["minutes"]), (
            f"chapter {number}: INSTRUCTORS.md says {rows[number][2]}, the notebook says {t['minutes']} "
            "(python -m course.agenda --markdown prints the right rows)")


def test_agendas_add_up_and_use_chapter_minutes():
    found = agendas()
    assert len(found) >= 2, "expected a 3-hour and a full-day agenda"
    for heading, rows in found:
        for (start, block, length), (next_start, _, _) in zip(rows, rows[1:], strict=False):
            assert minutes_of(start) + int(length) == minutes_of(next_start), (heading, block)
            chapter = re.match(r"(\d\d) ·", block)
            if chapter and chapter.group(1) in TIMES:
                assert int(length) == TIMES[chapter.group(1)]["minutes"], (heading, block)
        total = minutes_of(rows[-1][0]) - minutes_of(rows[0][0])
        declared = re.search(r"\((\d+) minutes\)", heading)
        if declared:
            assert total == int(declared.group(1)), heading


def test_agenda_command_prints_totals(capsys):
    assert agenda.main([]) == 0
    out = capsys.readouterr().out
    total = sum(t["minutes"] or 0 for t in TIMES.values())
    assert f"total: {total} minutes" in out
    assert agenda.main(["--markdown"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].startswith("| 00 | Start here | ")
    assert len(rows) == len(TIMES)
