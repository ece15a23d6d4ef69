# The two set-up commands of the README: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: vendor-static run test test-postgres test-suites test-suites-sqlite test-suites-postgres test-slow testhost-257 fresh-check lint format deps debian-deps migrate bench clean

# Debian packages first: pystemd builds against libsystemd-dev (order-only, so a
# warm machine's stamp stays valid).
$(STAMP): requirements.txt pyproject.toml | debian-deps
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q --no-deps -e .
	touch $(STAMP)

deps: debian-deps $(STAMP) vendor-static

debian-deps:
	./scripts/install-debian-packages.sh

# The pinned front-end packages (Chart.js) into static/vendor/ (static/vendor/packages.txt).
vendor-static:
	./scripts/vendor-static.sh

migrate: deps
	$(BIN)/python manage.py migrate --noinput

run: migrate
	$(BIN)/python manage.py collectstatic --noinput -v0
	$(BIN)/python manage.py loaddemo --skip-if-real-users
	./scripts/run-server.sh $(HOST) $(PORT)

# The database-backed suites run again on PostgreSQL + Redis (only their tests that use the
# database: the others would repeat the SQLite run exactly). Left empty, both are
# throwaway servers of this run (scripts/with-test-services.sh); set them to use your own
# (e.g. PG_URL=postgres://postgres@127.0.0.1:5432/specadmin_me REDIS_TEST_URL=redis://…/7).
PG_URL ?=
REDIS_TEST_URL ?=
# What pytest runs (empty: everything configured in pyproject.toml), and what runs again on
# PostgreSQL + Redis. The fresh-machine check narrows both.
TEST_PATHS ?=
PG_TEST_PATHS ?= tests/units tests/audit tests/deploys tests/perf tests/specadmin tests/api tests/notify \
  tests/watchdog tests/fleet
# Runs a target of this Makefile with the servers' URLs (given on the command line, so they
# win over an empty PG_URL= given to the outer make).
WITH_SERVICES = PG_URL=$(PG_URL) REDIS_TEST_URL=$(REDIS_TEST_URL) ./scripts/with-test-services.sh \
  sh -c '$(MAKE) --no-print-directory $(1) PG_URL="$$PG_URL" REDIS_TEST_URL="$$REDIS_TEST_URL"'

test: deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(call WITH_SERVICES,test-suites)

test-postgres: deps
	$(call WITH_SERVICES,test-suites-postgres)

# The two pytest runs, inside WITH_SERVICES, at once (scripts/both-test-runs.sh says why).
PG_WORKERS ?= 2
test-suites:
	./scripts/both-test-runs.sh PG_URL="$(PG_URL)" REDIS_TEST_URL="$(REDIS_TEST_URL)" \
	  TEST_PATHS="$(TEST_PATHS)" PG_TEST_PATHS="$(PG_TEST_PATHS)" PYTEST_ARGS="$(PYTEST_ARGS)"

test-suites-sqlite:
	$(BIN)/python -m pytest -n 2 $(TEST_PATHS) $(PYTEST_ARGS)

test-suites-postgres:
	DATABASE_URL=$(PG_URL) REDIS_URL=$(REDIS_TEST_URL) $(BIN)/python -m pytest -n $(PG_WORKERS) \
	  -m "not testhost and not browser and not qcluster and not slow" --only-database-tests \
	  $(PG_TEST_PATHS) $(PYTEST_ARGS)

# The README's set-up on a pristine Debian 12 root (scripts/fresh-machine-check.sh; the root
# is built once with debootstrap and cached under /var/tmp). .ci/run runs it after `test`:
# about 2.7 min with the cache, 4.4 min without (2 cores).
fresh-check: debian-deps
	FRESH_PG_URL=$(PG_URL) FRESH_REDIS_URL=$(REDIS_TEST_URL) ./scripts/fresh-machine-check.sh

# The slow set: a second test host booted from Debian 13 (systemd 257), built once.
testhost-257: deps
	./scripts/make-trixie-root.sh

test-slow: testhost-257
	$(BIN)/python -m pytest -m slow $(PYTEST_ARGS)

lint: deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: deps
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: deps
	$(BIN)/python benchmarks/lint_throughput.py

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache
