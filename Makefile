# The commands README.md tells you to run. Everything installs into .venv from uv.lock.
UV := .tools/bin/uv
EXTRAS ?= --extra dev --extra local --extra rerank
export UV_PYTHON_DOWNLOADS := never

.PHONY: install up test lint bench services

install: .venv/.installed

$(UV):
	python3 -m venv .tools
	.tools/bin/pip install --quiet 'uv>=0.5,<1'

.venv/.installed: pyproject.toml uv.lock | $(UV)
	$(UV) sync --frozen --inexact $(EXTRAS)
	touch $@

up: install
	.venv/bin/agentbus up

services:
	bash .ci/services

test: install services
	.venv/bin/pytest

lint: install
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/pyright

bench: install services
	.venv/bin/agentbus bench hop --json
