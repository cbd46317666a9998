# Eva — the two commands of the README:
#   make run    set everything up, then start Eva
#   make test   set everything up (with dev tools), then lint and run the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip

.PHONY: run test setup setup-dev lint clean

run: setup
	$(BIN)/eva

test: setup-dev lint
	$(BIN)/python -m pytest

lint:
	$(BIN)/ruff check .
	$(BIN)/lint-imports

setup: $(VENV)/.eva-setup
setup-dev: $(VENV)/.eva-setup-dev

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade "pip>=24"

$(VENV)/.eva-setup: $(BIN)/python pyproject.toml constraints.txt
	$(PIP) install --quiet -c constraints.txt -e .
	touch $@

$(VENV)/.eva-setup-dev: $(VENV)/.eva-setup
	$(PIP) install --quiet -c constraints.txt -e '.[dev]'
	touch $@

clean:
	rm -rf $(VENV)
