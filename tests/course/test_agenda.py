"""INSTRUCTORS.md agrees with the notebooks' own time estimates, and its agendas add up.

Every chapter in solutions/ must appear in the "Chapter timings" table with the minutes of
its ``**Time:**`` line (run ``python -m course.agenda --markdown`` for the rows). In each
agenda table (columns start | block | minutes) a chapter block lasts the chapter's minutes,
each start time is the previous start plus its minutes, and the total matches the
"(NNN minutes)" in the agenda's heading, when it has one, or runs from and to the clock
times of a "(09:00–17:30)" heading. The core-path total and every "chapter NN (M minutes)"
in the prose are the notebooks' too.
"""

import re

from course import agenda
from course.layout import ROOT

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


def test_core_total_and_chapter_minutes_in_prose_match_the_notebooks():
    core = [t for t in TIMES.values() if "(appendix)" not in t["title"]]
    total = sum(t["minutes"] for t in core)
    match = re.search(r"Chapters (\d\d)–(\d\d) add up to (\d+) minutes \((\d+) h (\d\d)\)", GUIDE)
    assert match, "INSTRUCTORS.md lacks 'Chapters 00–NN add up to N minutes (H h MM)'"
    assert (match.group(1), match.group(2)) == (core[0]["chapter"], core[-1]["chapter"])
    assert int(match.group(3)) == total, f"INSTRUCTORS.md says {match.group(3)}, the core chapters add up to {total}"
    assert (int(match.group(4)), int(match.group(5))) == divmod(total, 60)
    # "chapter 00 (20 minutes)", "07 · Interrupts (45 minutes)": every chapter length in the prose
    mentions = re.findall(r"[Cc]hapter (\d\d) \((\d+) minutes\)|(\d\d) · [^()|\n]+\((\d+) minutes\)", GUIDE)
    assert mentions
    for number_a, minutes_a, number_b, minutes_b in mentions:
        number, minutes = (number_a, minutes_a) if number_a else (number_b, minutes_b)
        assert int(minutes) == TIMES[number]["minutes"], f"INSTRUCTORS.md gives chapter {number} {minutes} minutes"


def test_agenda_headings_with_a_clock_range_start_and_end_there():
    ranged = [(heading, rows) for heading, rows in agendas() if re.search(r"\d\d:\d\d–\d\d:\d\d", heading)]
    assert ranged, "expected an agenda heading like 'Full day (09:00–17:30)'"
    for heading, rows in ranged:
        start, end = re.search(r"(\d\d:\d\d)–(\d\d:\d\d)", heading).groups()
        assert (rows[0][0], rows[-1][0]) == (start, end), heading
        assert rows[-1][1] == "End", heading


def test_agenda_command_prints_totals(capsys):
    assert agenda.main([]) == 0
    out = capsys.readouterr().out
    total = sum(t["minutes"] or 0 for t in TIMES.values())
    assert f"total: {total} minutes" in out
    assert agenda.main(["--markdown"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].startswith("| 00 | Start here | ")
    assert len(rows) == len(TIMES)
