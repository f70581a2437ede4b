# The two commands: `make run` and `make test`. Both keep the virtualenv in .venv/.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

# The newest Python >= 3.12 on this machine: PATH first, then pyenv's installs.
PYTHON ?= $(shell for c in python3.14 python3.13 python3.12 python3 \
	$$(ls -d $$HOME/.pyenv/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -rV); do \
	  if command -v $$c >/dev/null 2>&1 && $$c -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then \
	    command -v $$c; break; fi; done)

.PHONY: run test lint format lint-imports bench clean

$(VENV)/.created:
	@if [ -z "$(PYTHON)" ]; then echo "error: orkestrel needs Python >= 3.12 (python3.12 or newer on PATH); none found." >&2; exit 1; fi
	@echo "Creating $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	@touch $@

$(VENV)/.runtime: requirements.txt $(VENV)/.created
	$(PY) -m pip install -q -r requirements.txt
	@touch $@

$(VENV)/.dev: requirements.txt requirements-dev.txt $(VENV)/.runtime
	$(PY) -m pip install -q -r requirements-dev.txt
	@touch $@

run: $(VENV)/.runtime
	$(PY) manage.py migrate --noinput
	$(PY) manage.py bootstrap
	$(VENV)/bin/daphne -b $(HOST) -p $(PORT) --websocket-max-message-size 33554432 orkestrel.asgi:application

test: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	# Tests open and drop databases: no connection may outlive its test.
	CONN_MAX_AGE=0 $(VENV)/bin/pytest $(PYTEST_ARGS)

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(VENV)/.dev
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: $(VENV)/.dev
	$(PY) bench/loop.py

clean:
	rm -rf $(VENV) staticfiles
