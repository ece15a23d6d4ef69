#!/usr/bin/env bash
# Start the web server and one django-q2 worker cluster; stop both on Ctrl-C or SIGTERM.
set -euo pipefail
cd "$(dirname "$0")/.."
host=${1:-127.0.0.1}
port=${2:-8000}
setsid .venv/bin/python manage.py qcluster &
worker=$!
web=""
stop() {
  [ -n "$web" ] && kill -TERM "$web" 2>/dev/null || true
  # The cluster's main process stops its workers itself (signalling them too confuses
  # it); it lets running tasks finish, so give it a while before killing its whole group.
  kill -TERM "$worker" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$worker" 2>/dev/null || return 0; sleep 0.2; done
  kill -KILL -- "-$worker" 2>/dev/null || true
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
echo "specadmin: http://$host:$port/  (worker pid $worker)"
.venv/bin/python manage.py runserver --noreload "$host:$port" &
web=$!
wait "$web"
