#!/usr/bin/env bash
# Run a command with a PostgreSQL and a Redis for the test suites:
#
#   scripts/with-test-services.sh COMMAND [ARGS…]
#
# Given PG_URL (and REDIS_TEST_URL), those servers are used. Otherwise a throwaway
# PostgreSQL cluster (initdb, trust authentication, no fsync) and a throwaway Redis (no
# persistence) start on free loopback ports (below the ephemeral range), with their data
# under /var/tmp, and are stopped and removed when the command ends. So `make test` needs
# no database set up on a fresh machine, and two runs on one machine never share a database.
#
# Exported for the command: PG_URL (the suites' DATABASE_URL), REDIS_TEST_URL (their
# REDIS_URL), QCLUSTER_PG_ADMIN_URL and QCLUSTER_REDIS_URL (tests/deploys/test_qcluster.py
# creates its own databases there).
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARGS…]" >&2; exit 2; }

# A free loopback port below the kernel's ephemeral range (net.ipv4.ip_local_port_range,
# Linux ip-sysctl docs): a port of that range, free when picked, can go to any process's
# outgoing connection or bind(0) before the server binds it seconds later (the server then
# fails "Address already in use"); below it only a process naming the port can take it.
free_port() {
  python3 - <<'EOF'
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for port in random.sample(range(20000, low), 50):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        print(port)
        break
else:
    raise SystemExit(f"no free loopback port in 20000-{low - 1}")
EOF
}

workdir=""
pg_ctl=""
redis_pid=""
cleanup() {
  if [ -n "$pg_ctl" ]; then
    as_postgres "$pg_ctl" -D "$workdir/pg" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  if [ -n "$redis_pid" ]; then
    kill -TERM "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  [ -n "$workdir" ] && rm -rf "$workdir"
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

as_postgres() {
  # initdb and postgres refuse to run as root: as root, run them as Debian's postgres user.
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if [ -z "${PG_URL:-}" ] || [ -z "${REDIS_TEST_URL:-}" ]; then
  workdir=$(mktemp -d /var/tmp/specadmin-test-services.XXXXXX)
  chmod 0755 "$workdir"
fi

if [ -z "${PG_URL:-}" ]; then
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -x "$bin/initdb" ] || {
    echo "no PostgreSQL server found (Debian package postgresql; or set PG_URL)" >&2
    exit 1
  }
  port=$(free_port)
  mkdir -p "$workdir/pg"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$workdir/pg"
  as_postgres "$bin/initdb" -D "$workdir/pg" -U postgres -A trust -E UTF8 --locale=C.UTF-8 \
    --no-sync >"$workdir/initdb.log" 2>&1 || { cat "$workdir/initdb.log" >&2; exit 1; }
  pg_ctl=$bin/pg_ctl
  as_postgres "$pg_ctl" -D "$workdir/pg" -l "$workdir/pg/server.log" -w -t 60 start \
    -o "-p $port -k $workdir/pg -c listen_addresses=127.0.0.1 -c fsync=off \
        -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
    >/dev/null || { cat "$workdir/pg/server.log" >&2; exit 1; }
  export PG_URL="postgres://postgres@127.0.0.1:$port/specadmin"
fi
export QCLUSTER_PG_ADMIN_URL=${QCLUSTER_PG_ADMIN_URL:-${PG_URL%/*}/postgres}

if [ -z "${REDIS_TEST_URL:-}" ]; then
  command -v redis-server >/dev/null || {
    echo "no Redis server found (Debian package redis-server; or set REDIS_TEST_URL)" >&2
    exit 1
  }
  port=$(free_port)
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "$workdir" >"$workdir/redis.log" 2>&1 &
  redis_pid=$!
  up=""
  for _ in $(seq 1 100); do
    python3 - "$port" <<'EOF' && up=1 && break
import socket, sys
try:
    with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1) as s:
        s.sendall(b"PING\r\n")
        sys.exit(0 if s.recv(16).startswith(b"+PONG") else 1)
except OSError:
    sys.exit(1)
EOF
    sleep 0.1
  done
  [ -n "$up" ] || { cat "$workdir/redis.log" >&2; exit 1; }
  export REDIS_TEST_URL="redis://127.0.0.1:$port/15"
fi
export QCLUSTER_REDIS_URL=${QCLUSTER_REDIS_URL:-${REDIS_TEST_URL%/*}}

echo "test services: PostgreSQL ${PG_URL%/*}, Redis ${REDIS_TEST_URL%/*}" >&2
status=0
"$@" || status=$?
exit "$status"
