# The two set-up commands of the README: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test test-postgres test-slow testhost-257 lint format deps debian-deps migrate bench clean

# Debian packages first: pystemd builds against libsystemd-dev (order-only, so a
# warm machine's stamp stays valid).
$(STAMP): requirements.txt pyproject.toml | debian-deps
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q --no-deps -e .
	touch $(STAMP)

deps: debian-deps $(STAMP)

debian-deps:
	./scripts/install-debian-packages.sh

migrate: deps
	$(BIN)/python manage.py migrate --noinput

run: migrate
	$(BIN)/python manage.py collectstatic --noinput -v0
	$(BIN)/python manage.py loaddemo --skip-if-real-users
	./scripts/run-server.sh $(HOST) $(PORT)

# Scale-out setup for the database-backed suites (the kind of machine this project runs
# on starts PostgreSQL and Redis; elsewhere point these at your own).
PG_URL ?= postgres://postgres@127.0.0.1:5432/specadmin
REDIS_TEST_URL ?= redis://127.0.0.1:6379/15

test: deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -n 2 $(PYTEST_ARGS)
	$(MAKE) --no-print-directory test-postgres

test-postgres: deps
	DATABASE_URL=$(PG_URL) REDIS_URL=$(REDIS_TEST_URL) $(BIN)/python -m pytest -n 2 \
	  -m "not testhost and not browser and not qcluster and not slow" \
	  tests/units tests/audit tests/deploys tests/specadmin $(PYTEST_ARGS)

# The slow set: a second test host booted from Debian 13 (systemd 257), built once.
testhost-257: deps
	./scripts/make-trixie-root.sh

test-slow: testhost-257
	$(BIN)/python -m pytest -m slow $(PYTEST_ARGS)

lint: deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: deps
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: deps
	$(BIN)/python benchmarks/lint_throughput.py

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache
