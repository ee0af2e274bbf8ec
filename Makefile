# `make demo` and `make test` work on a fresh machine: they create .venv if missing
# and install gpcompose with the extras they need.
PYTHON ?= python3
VENV := .venv
VENV_PYTHON := $(VENV)/bin/python

.PHONY: demo test docs setup-examples setup-test bench lint

$(VENV_PYTHON):
	$(PYTHON) -m venv $(VENV)
	$(VENV_PYTHON) -m pip install --quiet --upgrade pip

setup-examples: $(VENV_PYTHON)
	$(VENV_PYTHON) -m pip install --quiet -e '.[examples]'

setup-test: $(VENV_PYTHON)
	$(VENV_PYTHON) -m pip install --quiet -e '.[test]'

demo: setup-examples
	$(VENV_PYTHON) examples/tour.py

test: setup-test
	$(VENV_PYTHON) -m pytest -n auto -q

docs: $(VENV_PYTHON)
	$(VENV_PYTHON) -m pip install --quiet -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(VENV_PYTHON) -m mkdocs build --strict

bench: $(VENV_PYTHON)
	$(VENV_PYTHON) -m pip install --quiet -e '.[bench]'
	$(VENV_PYTHON) benchmarks/core_gp.py
