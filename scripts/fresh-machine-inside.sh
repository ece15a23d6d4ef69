#!/usr/bin/env bash
# The README's set-up, step by step, inside the pristine Debian 12 root that
# scripts/fresh-machine-check.sh prepares (it runs this script with systemd-nspawn, in a
# clone of the repository's committed HEAD). Every step must pass; the first failure ends
# the run with its output.
#
# `.ci/run` runs here on a subset ($SUBSET below): ruff over everything; the run-server
# tests (gunicorn and a worker, `make run` stopped by Ctrl-C on a terminal), the documented
# systemd units linted, settings, access, architecture and docs; one browser test (Debian's
# Chromium through Playwright); the job system with real qcluster workers against a real
# test host (systemd-nspawn --boot inside this systemd-nspawn container works) on SQLite +
# ORM broker and on PostgreSQL + Redis (throwaway servers inside the root); and the
# PostgreSQL-only audit tests. Not here: the rest of the suite, which the machine's own
# `make test` runs just before; repeating it would double CI's time for no new coverage of
# the set-up.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
port=${FRESH_PORT:-8765}
logs=/root/fresh-logs  # one file per step; the check copies them out ($FRESH_CACHE/logs)
mkdir -p "$logs"
steps=0

step() {
  local name=$1
  shift
  steps=$((steps + 1))
  local log
  log=$logs/$(printf %02d "$steps")-$(echo "$name" | tr -c 'a-zA-Z0-9\n' - | cut -c1-40).log
  local start=$SECONDS
  echo "== $name"
  if "$@" >"$log" 2>&1; then
    echo "   ok ($((SECONDS - start)) s)"
    # pytest's summary lines, where the step ran pytest
    grep -E '^=+ .*(passed|failed|error).* =+$' "$log" | sed 's/^/   | /' || true
  else
    local status=$?
    echo "   FAILED ($((SECONDS - start)) s, exit $status): last lines of its output:"
    tail -40 "$log" | sed 's/^/   | /'
    exit 1
  fi
}

lint_example() {
  # The README's example has findings on purpose: exit 1, and EX201 among them.
  local status=0
  .venv/bin/python manage.py lintunits examples/vllm-kimi-k25-int4-ngram.service \
    >/root/lint.txt 2>&1 || status=$?
  cat /root/lint.txt
  [ "$status" -eq 1 ] || { echo "lintunits exited $status, expected 1 (findings)"; return 1; }
  grep -q "EX201" /root/lint.txt || { echo "EX201 missing from the findings"; return 1; }
}

serve_pages() {
  # `make run` (web + worker), a logged-in page and a static file over HTTP, then a stop as
  # systemd or a supervisor does it: SIGTERM to the server script (on a terminal, Ctrl-C
  # does the same; tests/specadmin/test_run_server.py checks that). All must end with 0.
  setsid make run PORT="$port" >/root/run.txt 2>&1 &
  local make_pid=$!
  local status=0
  .venv/bin/python scripts/http-smoke-check.py "http://127.0.0.1:$port" admin specadmin-demo \
    || status=$?
  local server
  server=$(pgrep -P "$make_pid" || true)
  [ -n "$server" ] && kill -TERM $server
  local code=0
  wait "$make_pid" || code=$?
  cat /root/run.txt
  [ "$status" -eq 0 ] || return "$status"
  [ "$code" -eq 0 ] || { echo "make run exited $code after SIGTERM to the server"; return 1; }
  if grep -q "Traceback\|make: \*\*\*" /root/run.txt; then
    echo "make run printed a traceback or a make error"
    return 1
  fi
}

# What `.ci/run` runs here (see the header): the set-up's own promises, one browser test (so
# Debian's Chromium and Playwright are proven), and real workers against a real test host.
SUBSET="tests/specadmin/test_run_server.py tests/specadmin/test_operations_units.py \
tests/specadmin/test_access.py tests/specadmin/test_docs.py tests/specadmin/test_settings.py \
tests/specadmin/test_architecture.py tests/deploys/test_browser_hosts.py \
tests/deploys/test_qcluster.py"

ci_subset() {
  # PostgreSQL and Redis: throwaway servers of this run (scripts/with-test-services.sh),
  # unless the check was given URLs. Test hosts here share the machine's network but cannot
  # see the port claims of the machine's own test hosts (its /var/tmp): claim ports in a
  # range of their own.
  local urls=()
  [ -n "${FRESH_PG_URL:-}" ] && urls+=("PG_URL=$FRESH_PG_URL")
  [ -n "${FRESH_REDIS_URL:-}" ] && urls+=("REDIS_TEST_URL=$FRESH_REDIS_URL")
  SPECADMIN_TESTHOST_FIRST_PORT=$((40000 + RANDOM % 20000)) FRESH_CHECK=skip .ci/run \
    "${urls[@]}" TEST_PATHS="$SUBSET" \
    PG_TEST_PATHS="tests/audit/test_postgresql.py" PYTEST_ARGS="-p no:cacheprovider"
}

step "make deps (Debian packages, then the Python ones)" make deps
step "lintunits on the README's example" lint_example
step "make migrate" make migrate
step "loaddemo" .venv/bin/python manage.py loaddemo
step "make run serves pages and stops on SIGTERM" serve_pages
step ".ci/run on a subset (see the header of this script)" ci_subset
echo "== all steps passed"
