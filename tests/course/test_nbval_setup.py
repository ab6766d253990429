"""nbval runs strictly, compares >= 95% of code cells, and every ignored cell says why."""

import importlib.util
import os
import subprocess
import sys
import tomllib

from course.layout import ROOT
from course.nbval_coverage import THRESHOLD, report
from helpers.environment import NOT_CHECKED, read_pins


def test_pytest_runs_nbval_strictly_in_parallel():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    addopts = options["addopts"].split()
    assert "--nbval" in addopts and "--nbval-lax" not in addopts
    assert "loadscope" in addopts and "tests/sanitize.cfg" in addopts
    assert {"tests", "solutions", "notebooks"} <= set(options["testpaths"])


def test_compared_share_and_reasons():
    for folder in report():
        assert folder.code_cells > 0
        assert folder.share >= THRESHOLD, f"{folder.folder}: only {folder.share:.1%} of code cells compared"
        assert all(cell.reason for cell in folder.ignored), [c for c in folder.ignored if not c.reason]


def test_sanitize_rules_are_paired():
    text = (ROOT / "tests/sanitize.cfg").read_text()
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    regexes = [i for i, line in enumerate(lines) if line.startswith("regex:")]
    assert regexes and all(lines[i + 1].startswith("replace:") for i in regexes)


def test_binder_requirements_agree_with_requirements():
    pins = read_pins(ROOT / "requirements.txt")
    binder = read_pins(ROOT / "binder/requirements.txt")
    assert binder == {k: v for k, v in pins.items() if k not in NOT_CHECKED}
    assert "jupyterlab" not in binder
    assert not any(line.startswith("-r") for line in (ROOT / "binder/requirements.txt").read_text().splitlines())
    assert (ROOT / "binder/runtime.txt").read_text().strip() == "python-3.11"
    post = (ROOT / "binder/postBuild").read_text()
    assert "set -euo pipefail" in post and "pip install" in post


def test_ci_calls_make_test():
    assert "make test" in (ROOT / ".ci/run").read_text()


def test_a_pytest_run_without_a_session_leaves_no_run_folder(tmp_path):
    # `pytest --help` configures the plugins (conftest makes the run's temp folder then) but
    # never starts a session, so the folder must go at unconfigure.
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=ROOT, env=env, capture_output=True, check=True)
    assert list(tmp_path.iterdir()) == []


def test_the_venv_has_no_rfc3987_parser():
    """`make`'s install removes rfc3987-syntax: importing it costs 1 s of CPU in every process
    that imports nbformat (each pytest and grader worker), and nothing here validates IRIs."""
    assert importlib.util.find_spec("rfc3987_syntax") is None, \
        "rebuild the venv with `make test` (its install step removes rfc3987-syntax)"
    assert "pip uninstall -y rfc3987-syntax" in (ROOT / "Makefile").read_text()
    assert "pip uninstall -y rfc3987-syntax" in (ROOT / "binder/postBuild").read_text()  # Binder alike


def test_ci_runs_lint_on_github_and_knows_the_stress_baseline():
    workflow = (ROOT / ".github/workflows/test.yml").read_text()
    assert "make test PYTHON=" in workflow and "make lint PYTHON=" in workflow
    baseline = (ROOT / ".ci/grade-stress-baseline").read_text().split()[0]
    assert len(baseline) == 40 and int(baseline, 16) >= 0
    run = (ROOT / ".ci/run").read_text()
    assert "GRADE_STRESS_BATCHES=20 make test-stress" in run and "GRADE_STRESS_BATCHES=3 make test-stress" in run
