# Two entry points for a newcomer: `make demo` (main job) and `make test` (whole suite).
# `make reliability` runs the heavy reliability variants (crashes, concurrency, long fuzzing).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint reliability clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m philont demo $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check philont tests scripts alembic
	$(BIN)/mypy

test: $(STAMP) lint
	$(BIN)/pytest $(PYTEST_ARGS)

reliability: $(STAMP)
	PHILONT_HEAVY=1 $(BIN)/pytest -m reliability $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
