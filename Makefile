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

# pytest-xdist workers `make test` runs the suite on (each has its own test database and Redis
# databases: tests/conftest.py); most tests wait on servers and sockets, not the CPU.
# TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 3

# Tests and benchmarks run with DEBUG off, where the settings refuse to start without a key:
# they get this one unless SECRET_KEY is already set. Never use it for a server.
TEST_SECRET_KEY := orkestrel-tests-only-c4f1e0b27d9a4c6e8b3f5a1d7e2c9b60-not-for-any-server

# Daphne (``orkestrel.server``: websocket faults close with a code) takes websocket messages,
# and frames (a browser sends a message as one frame), of up to 32 MiB; the app answers a frame
# over 1 MiB with a ``too_large`` error frame, and the server closes over 32 MiB with 1009.
WEBSOCKET_LIMITS := --websocket-max-message-size 33554432 --websocket-max-frame-size 33554432

.PHONY: run up test lint format lint-imports bench audit secret-key clean

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

# A random SECRET_KEY for this checkout, made once and kept in the git-ignored .env (which the
# settings read); skipped when SECRET_KEY is set in the environment or .env already has one.
secret-key: $(VENV)/.created
	@if [ -z "$$SECRET_KEY" ] && ! grep -qs '^SECRET_KEY=' .env; then \
	  if [ -s .env ] && [ -n "$$(tail -c 1 .env)" ]; then echo >> .env; fi; \
	  (umask 077; echo "SECRET_KEY=$$($(PY) -c 'import secrets; print(secrets.token_urlsafe(50))')" >> .env); \
	  echo "Wrote a random SECRET_KEY to .env (git-ignored; keep it: changing it signs everyone out)"; \
	fi

run: $(VENV)/.runtime secret-key
	$(PY) manage.py migrate --noinput
	$(PY) manage.py bootstrap
	$(PY) -m orkestrel.server -b $(HOST) -p $(PORT) $(WEBSOCKET_LIMITS) orkestrel.asgi:application

# Two web processes and two Celery workers on PostgreSQL and Redis (README, "Running several
# processes"): DATABASE_URL, REDIS_URL and CELERY_BROKER_URL default to the local services;
# UP_ARGS passes options on, e.g. `make up UP_ARGS="--workers 4"`. Ctrl-C stops them all.
up: $(VENV)/.runtime secret-key
	$(PY) scripts/up.py --host $(HOST) --port $(PORT) $(UP_ARGS)

test bench: export SECRET_KEY ?= $(TEST_SECRET_KEY)

test: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy
	# Tests open and drop databases: no connection may outlive its test.
	CONN_MAX_AGE=0 $(VENV)/bin/pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder $(PYTEST_ARGS)

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(VENV)/.dev
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: $(VENV)/.dev
	$(PY) bench/loop.py

# Known vulnerabilities in the installed packages (pip-audit). Without access to a vulnerability
# database it says so in one line and succeeds; a package with a known vulnerability fails it.
# AUDIT_ARGS passes options on, e.g. `make audit AUDIT_ARGS="--vulnerability-service osv"`.
audit: $(VENV)/.dev
	@$(VENV)/bin/pip-audit --local --progress-spinner off --format json $(AUDIT_ARGS) \
	  2>$(VENV)/.audit-errors \
	  | $(PY) -c "$$AUDIT_REPORT"

define AUDIT_REPORT
import json, sys
try:
    found = json.load(sys.stdin)["dependencies"]
except (ValueError, KeyError):
    errors = open("$(VENV)/.audit-errors").read()
    last = (errors.strip().splitlines() or ["no output"])[-1][:200]
    offline = any(sign in errors for sign in ("ConnectionError", "Max retries", "timed out"))
    print(f"audit: not done, {'no access to the vulnerability database' if offline else 'pip-audit failed'}: {last}")
    sys.exit(0 if offline else 1)
audited = [dep for dep in found if "skip_reason" not in dep]
if not audited:
    print(f"audit: not done, the vulnerability database knows none of the {len(found)} installed packages (no access to it from here)")
    sys.exit(0)
vulnerable = [dep for dep in audited if dep.get("vulns")]
for dep in vulnerable:
    for vuln in dep["vulns"]:
        fixed = ", ".join(vuln.get("fix_versions") or []) or "no fix yet"
        print(f"{dep['name']} {dep['version']}: {vuln['id']} (fixed in {fixed})")
skipped = len(found) - len(audited)
print(f"audit: {len(audited)} packages checked, {len(vulnerable)} with known vulnerabilities" + (f", {skipped} unknown to the database" if skipped else ""))
sys.exit(1 if vulnerable else 0)
endef
export AUDIT_REPORT

clean:
	rm -rf $(VENV) staticfiles
