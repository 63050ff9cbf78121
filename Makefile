# Two entry points for a fresh Debian/Ubuntu machine: `make demo` and `make test`.
# Each does its own set-up: system packages (bubblewrap, python3-venv), .venv with the pinned
# dependencies, and .venv-sandbox, the pinned Python that reproduce.sh runs with inside sandboxes.

PYTHON ?= python3
VENV := .venv
SANDBOX_ENV := .venv-sandbox
BIN := $(VENV)/bin
CORES ?= 2
RESULTS ?= results
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup system-deps sandbox-env demo test test-fast lint format dag-benchmark clean

setup: system-deps $(VENV)/.installed sandbox-env

system-deps:
	@missing=""; \
	command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	$(PYTHON) -c 'import ensurepip, venv' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:$$missing"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi

$(VENV)/.installed: requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.lock
	$(BIN)/pip install -q --no-deps -e .
	touch $@

# Rebuilt by the same code the workflow uses when envs/sandbox.txt changes (a hash stamp inside).
sandbox-env: $(VENV)/.installed
	$(BIN)/python -m sabench.sandbox.pyenv $(SANDBOX_ENV) envs/sandbox.txt

demo: setup
	$(BIN)/snakemake --cores $(CORES) --config results=$(RESULTS)
	@echo
	@cat $(RESULTS)/tables/summary.md
	@echo
	@echo "Tables: $(RESULTS)/tables/*.parquet   Report: $(RESULTS)/report/index.html"

test: setup
	$(BIN)/python -m pytest

test-fast: setup
	$(BIN)/python -m pytest -m "not workflow and not docker and not podman and not slurm"

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/snakefmt --check Snakefile rules/
	$(BIN)/snakemake --lint

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .
	$(BIN)/snakefmt Snakefile rules/

dag-benchmark: setup
	$(BIN)/python benchmarks/dag_scale.py

clean:
	rm -rf $(RESULTS) .snakemake
