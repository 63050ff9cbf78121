# Two entry points for a fresh Debian/Ubuntu machine: `make demo` and `make test`.
# Each does its own set-up: system packages (bubblewrap, python3-venv; only as root or with
# password-less sudo, else one line says which sandbox backends remain), .venv with the pinned
# dependencies, and .venv-sandbox, the pinned Python that reproduce.sh runs with inside sandboxes.
# PYTHON: the interpreter for .venv (default: the first Python >= 3.11 on PATH, scripts/dev/host.sh).

PYTHON ?=
VENV := .venv
SANDBOX_ENV := .venv-sandbox
BIN := $(VENV)/bin
CORES ?= 2
RESULTS ?= results
LOCK_VENV := .venv-lock

.PHONY: setup system-deps sandbox-env demo test test-fast lint format lock dag-benchmark clean

setup: system-deps $(VENV)/.installed sandbox-env

system-deps:
	@PYTHON="$(PYTHON)" sh scripts/dev/host.sh system-deps

# requirements.lock: the runtime pins (pyproject's dependencies + the slurm extra);
# requirements-dev.lock: the same pins plus the dev extra (tests, linters).
$(VENV)/.installed: requirements.lock requirements-dev.lock pyproject.toml
	@python=$$(sh scripts/dev/host.sh python "$(PYTHON)") || exit 1; \
	echo "$$python -m venv $(VENV)"; $$python -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.lock -r requirements-dev.lock
	$(BIN)/pip install -q --no-deps -e .
	touch $@

# Rebuilt by the same code the workflow uses when envs/sandbox.txt changes (a hash stamp inside).
sandbox-env: $(VENV)/.installed
	$(BIN)/python -m sabench.sandbox.pyenv $(SANDBOX_ENV) envs/sandbox.txt

# The sandbox check first: without a working backend, one line says what is missing.
demo: setup
	@$(BIN)/python -m sabench.sandbox --config config/config.yaml
	$(BIN)/snakemake --cores $(CORES) --config results=$(RESULTS)
	@echo
	@cat $(RESULTS)/tables/summary.md
	@echo
	@echo "The drifted agent's failures (drifted/kmeans-pp/0: failed, its low scores) are planted on purpose: resources/manifests/drifted/*.yaml lists each drift."
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

# Regenerate both locks from pyproject.toml with pip-tools (in its own venv): pins that still
# satisfy pyproject are kept; `make lock UPGRADE=1` moves every pin to the newest release.
lock:
	@python=$$(sh scripts/dev/host.sh python "$(PYTHON)") || exit 1; \
	[ -x $(LOCK_VENV)/bin/pip-compile ] || { $$python -m venv $(LOCK_VENV) && \
	  $(LOCK_VENV)/bin/pip install -q pip-tools; }
	$(LOCK_VENV)/bin/pip-compile -q $(if $(UPGRADE),--upgrade) --strip-extras --no-emit-index-url \
	  --no-emit-find-links --extra slurm -o requirements.lock pyproject.toml
	$(LOCK_VENV)/bin/pip-compile -q $(if $(UPGRADE),--upgrade) --strip-extras --no-emit-index-url \
	  --no-emit-find-links --extra dev --extra slurm -c requirements.lock \
	  -o requirements-dev.lock pyproject.toml

dag-benchmark: setup
	$(BIN)/python benchmarks/dag_scale.py

clean:
	rm -rf $(RESULTS) .snakemake
