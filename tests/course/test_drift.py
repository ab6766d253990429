"""The upgrade-drift report: parsing nbval's JUnit XML and formatting the report.

The fixture tests/course/fixtures/drift/junit_00_start_here.xml is a real nbval run (pytest -vv
--junitxml) of chapter 00 with two stored outputs edited and one cell made to raise.
The real command (`python -m course.drift`) needs the package index, so CI skips it.
"""

from pathlib import Path

from course import drift

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "drift" / "junit_00_start_here.xml"


def parsed():
    return drift.parse_junit(FIXTURE.read_text(encoding="utf-8"), "00_start_here.ipynb")


def test_parse_junit_finds_every_changed_cell():
    result = parsed()
    assert result.cells == 5
    assert [c.cell for c in result.changes] == ["Cell 1", "Cell 2", "Cell 3", "Cell 4"]
    first, second, third, fourth = result.changes
    assert first.source == 'print("\\n".join(self_check()))'
    assert first.diff == "stored `langgraph 1.2.23` → now `langgraph 1.2.24`"
    assert second.source == 'remember = """'
    assert second.diff == "stored `process 1 stored: {'seat': 'aisle'}` → now `process 1 stored: {'seat': 'window'}`"
    assert third.diff == "raises now: `AttributeError: 'InMemorySaver' object has no attribute 'no_such_method'`"
    assert fourth.diff == "raises now: `NameError: name 'kinds' is not defined`"
    assert all("\x1b" not in c.diff and "#x1B" not in c.diff for c in result.changes)


def test_report_lists_versions_notebooks_and_one_line_diffs():
    pinned = {"langgraph": "1.2.24", "langchain-core": "1.8.3"}
    newest = {"langgraph": "1.2.24", "langchain-core": "1.8.4"}
    clean = drift.NotebookResult("01_threads.ipynb", cells=30)
    broken = drift.NotebookResult("02_checkpoint_anatomy.ipynb", error="did not finish within 1800 s")
    released = {"langgraph": "1.2.25", "langchain-core": "1.8.4"}
    report = drift.format_report(pinned, newest, [parsed(), clean, broken], "2026-01-01 00:00 UTC", released=released)
    lines = report.splitlines()
    assert lines[0] == "# Upgrade drift report"
    assert "| langgraph | 1.2.24 | 1.2.25 | 1.2.24 |" in lines
    assert "| langchain-core | 1.8.3 | 1.8.4 | 1.8.4 (newer) |" in lines
    assert any(line.startswith("pip could not install langgraph 1.2.25:") for line in lines)
    assert "**Result:** 2 of 3 notebook(s) changed; 4 of 35 cells differ." in lines
    assert "| 00_start_here.ipynb | 5 | 4 |" in lines
    assert "| 02_checkpoint_anatomy.ipynb | 0 | did not run |" in lines
    assert "## 00_start_here.ipynb" in lines and "## 01_threads.ipynb" not in lines
    assert "- Cell 1 `print(\"\\n\".join(self_check()))`: stored `langgraph 1.2.23` → now `langgraph 1.2.24`" in lines
    assert "- did not run: did not finish within 1800 s" in lines


def test_report_without_drift_and_with_a_setup_error():
    same = {"langgraph": "1.2.24"}
    report = drift.format_report(same, same, [drift.NotebookResult("00_start_here.ipynb", cells=5)], "today")
    assert "The newest installable releases are the pinned ones" in report
    assert "**Result:** no drift. All 5 cells of 1 notebook(s) give the stored outputs." in report
    failed = drift.format_report(same, {}, [], "today", setup_error="`pip install` failed (exit 1)")
    assert "| langgraph | 1.2.24 | ? | ? (newer) |" in failed
    assert "**Result:** the environment could not be built: `pip install` failed (exit 1)" in failed


def test_pinned_versions_read_requirements(tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("# pins\nLangGraph==1.0.0\nlanggraph_checkpoint == 2.0.1  # note\nother==3\n", encoding="utf-8")
    assert drift.pinned_versions(req) == {"langgraph": "1.0.0", "langgraph-checkpoint": "2.0.1",
                                          "langgraph-checkpoint-sqlite": "?", "langchain-core": "?"}
    assert "?" not in drift.pinned_versions().values()  # the course pins all four


def test_summarize_failure_fallbacks():
    source, diff = drift.summarize_failure("Cell 1: Cell outputs differ\n\nInput:\nx\n\nTraceback:\n"
                                           " Unexpected output fields from running code: {'stderr'}\n")
    assert (source, diff) == ("x", "Unexpected output fields from running code: {'stderr'}")
    assert drift.summarize_failure("something odd happened")[1] == "something odd happened"
    truncated = ("Cell 1: Cell outputs differ\nInput:\nx\nTraceback:\n  - all 22 pinned packages\n"
                 "  ...Full output truncated, use '-vv' to show\n")
    assert drift.summarize_failure(truncated)[1] == "stored `(not shown)` → now `all 22 pinned packages`"
    assert len(drift.summarize_failure("Input:\nx\nTraceback:\n" + "y" * 500)[1]) == drift.ONE_LINE
