#!/usr/bin/env bash
# The suite's two pytest runs at once (`make test-suites`, inside the test services):
# `make test-suites-sqlite` (everything, SQLite + ORM broker, two workers) in the
# foreground and `make test-suites-postgres` (the database tests again on PostgreSQL +
# Redis, one worker) beside it, its output kept in a file and printed once both ended.
#
# Why: on 2 cores the SQLite run leaves about a third of the CPU idle (its test hosts and
# real workers mostly wait for the vLLM double to load and stream), which the PostgreSQL
# run, pure CPU, fills; one after the other they took 22 + 6 minutes (docs/benchmarks.md,
# "CI's time"). Arguments are make variables for both (PG_URL=…, PYTEST_ARGS=…). Exit
# status: the SQLite run's if it failed, else the PostgreSQL run's.
set -uo pipefail
log=$(mktemp /var/tmp/specadmin-test-postgres.XXXXXX)
trap 'rm -f "$log"' EXIT
make --no-print-directory test-suites-postgres PG_WORKERS=1 "$@" >"$log" 2>&1 &
postgres=$!
make --no-print-directory test-suites-sqlite "$@"
first=$?
wait "$postgres"
second=$?
echo "== the PostgreSQL + Redis run (beside the SQLite run; exit status $second)"
cat "$log"
[ "$first" -ne 0 ] && exit "$first"
exit "$second"
