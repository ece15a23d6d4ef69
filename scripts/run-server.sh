#!/usr/bin/env bash
# Start the web server (gunicorn, static files by WhiteNoise) and one django-q2 worker
# cluster. Ctrl-C or SIGTERM stops both and exits 0; if either ends by itself, the other is
# stopped and the script exits non-zero.
#   scripts/run-server.sh [HOST] [PORT]
set -uo pipefail
cd "$(dirname "$0")/.."
# On a terminal, run in a process group of our own that holds the terminal (job control):
# Ctrl-C then reaches only the server, which stops and exits 0 — not `make run` above it,
# which would otherwise die of the SIGINT itself however cleanly the server stopped.
if [ -t 0 ] && [ -z "${SPECADMIN_RUN_SERVER_FOREGROUND:-}" ]; then
  set -m
  SPECADMIN_RUN_SERVER_FOREGROUND=1 "$0" "$@"
  exit $?
fi
host=${1:-127.0.0.1}
port=${2:-8000}
# The same address for `manage.py check --deploy` (specadmin.W001) and gunicorn, which
# warns at start when it is not loopback (docs/operations.md, "Behind a reverse proxy").
export SPECADMIN_BIND="$host:$port"
.venv/bin/gunicorn --config python:specadmin.gunicorn_conf --bind "$host:$port" &
web=$!
# Its own session: Ctrl-C reaches only the cluster's main process (through stop below),
# which stops its workers itself; signalling them too confuses it.
setsid .venv/bin/python manage.py qcluster &
worker=$!

stop() {
  kill -TERM "$web" "$worker" 2>/dev/null
  # The cluster lets running tasks finish: give it a while, then end its whole session.
  for _ in $(seq 1 100); do
    { kill -0 "$web" || kill -0 "$worker"; } 2>/dev/null || return 0
    sleep 0.2
  done
  kill -KILL "$web" -- "-$worker" 2>/dev/null
  return 0
}
trap 'trap "" INT TERM; stop; exit 0' INT TERM
echo "specadmin: http://$host:$port/  (web pid $web, worker pid $worker)"
wait -n "$web" "$worker"
status=$?
trap "" INT TERM
echo "specadmin: the $(kill -0 "$web" 2>/dev/null && echo worker || echo web server) stopped" \
  "by itself (exit $status); stopping the rest" >&2
stop
exit $((status == 0 ? 1 : status))
