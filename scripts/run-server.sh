#!/usr/bin/env bash
# Start the web server and one django-q2 worker cluster; stop both on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
host=${1:-127.0.0.1}
port=${2:-8000}
.venv/bin/python manage.py qcluster &
worker=$!
trap 'kill "$worker" 2>/dev/null; wait "$worker" 2>/dev/null' EXIT INT TERM
echo "specadmin: http://$host:$port/  (worker pid $worker)"
.venv/bin/python manage.py runserver --noreload "$host:$port"
