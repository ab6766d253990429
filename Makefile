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

.PHONY: lab test test-stress build cheatsheet show-then-save bench coverage progress drift grade-course check-python clean-venv

check-python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "This course needs Python 3.11: install it (e.g. pyenv install 3.11) or run 'make PYTHON=/path/to/python3.11 test'."; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || { echo "This course needs Python 3.11, but '$(PYTHON)' is $$($(PYTHON) -c 'import platform; print(platform.python_version())'): run 'make PYTHON=/path/to/python3.11 test'."; exit 1; }

$(PINS_STAMP): requirements.txt | check-python
	@echo "Building $(VENV) from requirements.txt (the first run takes a few minutes)..."
	@rm -rf $(VENV)
	@$(PYTHON) -m venv $(VENV)
	@# pip's output goes to a log that is shown only when the install fails
	@{ $(PY) -m pip install --upgrade pip && $(PY) -m pip install -r requirements.txt ; } > $(VENV)/install.log 2>&1 \
	   || { tail -n 30 $(VENV)/install.log; echo "Installing the pinned packages failed; full log: $(VENV)/install.log"; exit 1; }
	@touch $(PINS_STAMP)

$(STAMP): $(PINS_STAMP) pyproject.toml
	@$(PY) -m pip install --no-deps -e . > $(VENV)/install-helpers.log 2>&1 \
	   || { tail -n 30 $(VENV)/install-helpers.log; echo "Installing the course's helpers package failed."; exit 1; }
	@touch $(STAMP)
	@echo "$(VENV) is ready."

lab: $(STAMP)
	@$(VENV)/bin/jupyter lab --notebook-dir=notebooks --ServerApp.default_url=/lab/tree/00_start_here.ipynb --port=$(PORT) $$( [ "$$(id -u)" = 0 ] && echo --allow-root )

test: $(STAMP)
	@$(PY) -m pytest

# The grader under load (issue 16): 20 mixed batches while every core is busy (28-46 min on 2 cores).
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
