# The two commands of the README. Everything else they need is made on the way.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test lint mutation serve check-python

check-python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "KernelSeek needs Python 3.11 or newer; set PYTHON=python3.11")'

# The base install: what a dashboard host needs (no torch).
$(BIN)/.base-installed: pyproject.toml | check-python
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $@

# The test install: base plus the dev extra (pytest, playwright, torch's CPU build from this machine's disk).
$(BIN)/.dev-installed: pyproject.toml | check-python
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(BIN)/.base-installed $@

# The port first: a second `make run` on a busy one stops at once, before it migrates or bootstraps anything.
run: $(BIN)/.base-installed
	$(BIN)/python manage.py serve --host $(HOST) --port $(PORT) --check-port
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py bootstrap
	$(BIN)/python manage.py serve --host $(HOST) --port $(PORT)

# The suite on TEST_WORKERS pytest-xdist workers (tests/parallel.py keeps them apart): most tests wait on child
# processes, servers and sockets, so two workers on two cores take about half the time of one (docs/testing.md,
# "CI time"). TEST_WORKERS=0 runs it in this one process. The slowest tests are listed at the end.
TEST_WORKERS ?= 2

test: $(BIN)/.dev-installed
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --durations=15 $(PYTEST_ARGS)

# Lint and format check (ruff), then the type check (mypy: strict on gpu_harness, agentloop and questionbank,
# django-stubs' plugin on the site), both configured in pyproject.toml; CI runs it before the tests. `ruff format .`
# and `ruff check --fix .` repair most of what ruff finds. mypy keeps its cache in .mypy_cache (a warm run takes
# seconds).
lint: $(BIN)/.dev-installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Mutation testing of the modules that decide verdicts (configured in pyproject.toml, [tool.mutmut]; the figures
# and what they mean in docs/testing.md). Takes an hour or more on two cores; not part of CI.
mutation: $(BIN)/.dev-installed
	$(BIN)/mutmut run
	$(BIN)/python tests/mutation_report.py --survivors
