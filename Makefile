# Two commands for learners: `make lab` and `make test`. Both build .venv when it is
# missing or older than requirements.txt, and reinstall the helpers package (seconds)
# when pyproject.toml changes.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PINS_STAMP := $(VENV)/.installed
STAMP := $(VENV)/.helpers-installed
PY := $(VENV)/bin/python
PORT ?= 8888
# Extra options for `jupyter lab` (the browser test passes --no-browser and its own port).
LAB_OPTIONS ?=

.PHONY: lab test test-browser test-stress dev lint build cheatsheet show-then-save bench coverage progress drift grade-course check-python clean-venv

check-python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "This course needs Python 3.11: install it (e.g. pyenv install 3.11) or run 'make PYTHON=/path/to/python3.11 test'."; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || { echo "This course needs Python 3.11, but '$(PYTHON)' is $$($(PYTHON) -c 'import platform; print(platform.python_version())'): run 'make PYTHON=/path/to/python3.11 test'."; exit 1; }

$(PINS_STAMP): requirements.txt | check-python
	@echo "Building $(VENV) from requirements.txt (the first run takes a few minutes)..."
	@rm -rf $(VENV)
	@$(PYTHON) -m venv $(VENV)
	@# pip's output goes to a log that is shown only when the install fails.
	@# rfc3987-syntax (jsonschema's optional IRI format check, which jupyter-events pulls in)
	@# builds a parser when imported: 1 s of CPU in every process that imports nbformat or
	@# Jupyter's server, about 20 s per test run. Nothing here checks IRIs; pip check stays clean.
	@{ $(PY) -m pip install --upgrade pip && $(PY) -m pip install -r requirements.txt \
	   && $(PY) -m pip uninstall -y rfc3987-syntax ; } > $(VENV)/install.log 2>&1 \
	   || { tail -n 30 $(VENV)/install.log; echo "Installing the pinned packages failed; full log: $(VENV)/install.log"; exit 1; }
	@touch $(PINS_STAMP)

# The editable install's *.egg-info is a build artefact that the installed package does not
# need: it is removed so JupyterLab's file browser (rooted here) does not show it.
# course.jupyter_kernels install: kernels report the same language_info on every machine.
$(STAMP): $(PINS_STAMP) pyproject.toml
	@{ $(PY) -m pip install --no-deps -e . && rm -rf ./*.egg-info && $(PY) -m course.jupyter_kernels install ; } \
	   > $(VENV)/install-helpers.log 2>&1 \
	   || { tail -n 30 $(VENV)/install-helpers.log; echo "Installing the course's helpers package failed."; exit 1; }
	@touch $(STAMP)
	@echo "$(VENV) is ready."

# Rooted at the course folder (as on Binder), so solutions/ and the README are one click
# away; LabApp.default_url (not ServerApp's, which JupyterLab overrides) opens chapter 00.
# Kernels talk over Unix sockets (ipc): no "running over TCP without encryption" warning.
# make's own variables are dropped: JupyterLab's terminals would inherit MAKELEVEL, and
# `make progress` typed there would print "make[1]: Entering directory" lines.
# course.jupyter_kernels install (also run by Binder's postBuild) is repeated here, so a .venv
# built before it existed also culls kernels left idle for 20 minutes with no tab open.
lab: $(STAMP)
	@$(PY) -m course.jupyter_kernels install > /dev/null
	@env -u MAKELEVEL -u MAKEFLAGS -u MFLAGS $(VENV)/bin/jupyter lab --ServerApp.root_dir=. \
	   --LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb --KernelManager.transport=ipc \
	   --port=$(PORT) $(LAB_OPTIONS) $$( [ "$$(id -u)" = 0 ] && echo --allow-root )

# Bytecode caches on even where the environment turns them off (PYTHONDONTWRITEBYTECODE, as
# in some containers): the suite starts dozens of Python processes (workers, kernels, grader
# workers) that would each compile the course's modules again; __pycache__ is gitignored.
test: $(STAMP)
	@PYTHONDONTWRITEBYTECODE= $(PY) -m pytest

# Maintainers: ruff and jupytext (the `dev` extra in pyproject.toml); learners never need them.
DEV_STAMP := $(VENV)/.dev-installed
$(DEV_STAMP): $(STAMP) pyproject.toml
	@{ $(PY) -m pip install -e '.[dev]' && rm -rf ./*.egg-info ; } > $(VENV)/install-dev.log 2>&1 \
	   || { tail -n 30 $(VENV)/install-dev.log; echo "Installing the maintainer extra failed."; exit 1; }
	@touch $(DEV_STAMP)

dev: $(DEV_STAMP)

lint: $(DEV_STAMP)
	@$(VENV)/bin/ruff check .
	@$(PY) -m course.round_trip

# Maintainers: JupyterLab in headless Chromium (see CONTRIBUTING.md). Installs the
# `browser` extra of pyproject.toml into .venv when it is missing; needs a Chromium binary.
BROWSER_EXTRA = $$($(PY) -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["browser"])')
test-browser: $(STAMP)
	@$(PY) -c 'import playwright' 2>/dev/null || $(PY) -m pip install -q $(BROWSER_EXTRA)
	@COURSE_BROWSER_TESTS=1 $(PY) -m pytest -o addopts="-p no:cacheprovider" tests/browser
# The grader under load (issue 16): mixed batches while every core is busy, 20 by default (about
# 18 minutes on 2 cores; GRADE_STRESS_BATCHES=N for fewer). .ci/run decides how many (see there).
test-stress: $(STAMP)
	@$(PY) -m pytest -m slow -n 0 -s tests/course/test_grade_stress.py

build: $(STAMP)
	@$(PY) -m course.build $(CHAPTERS)

cheatsheet: $(STAMP)
	@$(PY) -m course.cheatsheet

show-then-save: $(STAMP)
	@$(PY) -m course.show_then_save

bench: $(STAMP)
	@$(PY) -m course.bench

coverage: $(STAMP)
	@$(PY) -m course.nbval_coverage

progress: $(STAMP)
	@$(PY) -m course.progress

drift: $(STAMP)
	@$(PY) -m course.drift

grade-course: $(STAMP)
	@$(PY) -m course.grade solutions notebooks

clean-venv:
	rm -rf $(VENV)
