"""Watchdog scale: hosts checked per second per worker, and the largest fleet that keeps a
30 s period, on SQLite + the ORM broker and on PostgreSQL + Redis.

Run: `.venv/bin/python benchmarks/watchdog_scale.py [--workers 2] [--latency-ms 5]
[--capacity-s 30] [--verify-s 65] [--only sqlite|postgres]`.
PostgreSQL at 127.0.0.1:5432 (trust; `--pg-url`), Redis at 127.0.0.1:6379 (database 13;
`--redis-url`). The last line: `RESULT max hosts at a 30 s period: N (SQLite+ORM), M
(PostgreSQL+Redis)`.

What runs is the product's own path, with a fake host behind the Transport:
- a throwaway database (a SQLite file in a temp dir, or a new PostgreSQL database dropped
  at the end), migrated; N hosts, each with one pushed vLLM unit;
- real `manage.py qcluster` workers (`--workers` of them, in one cluster) started through
  this file (`--cluster`), which only points `watchdog.runner`'s connection at
  `tests/doubles/watch_host.py` (a healthy host: unit active, file = the approved text,
  /metrics answering with a request running and tokens generated, 8 GPUs) with
  `--latency-ms` per host operation (an SSH round trip; a check makes one per host
  command docs/watchdog.md lists) and logs each check's host and time to a file;
- the dispatcher (`watchdog.dispatch.run_dispatcher`, what the minute schedule runs) in a
  process of its own with a 1 s tick; the schedule row is removed so it is the only one.
Phase 1 (capacity): every host due all the time (period 1 s) for `--capacity-s`: checks
per second, per worker. Phase 2 (verify): N = 80 % of what that rate covers in 30 s, period
30 s, for `--verify-s`: no host may go unchecked for longer than 30 s + 2 ticks + 1 s
(from the start, between checks, to the end) nor be checked more often than once a
period; on a miss N drops by a fifth and
phase 2 runs again (three tries). Phase 3 (isolation): half the N that kept its period,
beside 2 hosts that are down (each check waits out the 5 s connection timeout) and 2 that
are slow (0.5 s a host command): the healthy ones must keep it the same way. Between
phases the broker's queue is purged and every claim reset, so no check left over from the
last phase runs. Only loopback; every wait is bounded.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.clusters import stop_cluster  # noqa: E402  (after the path insert)

PERIOD_S = 30
TICK_S = 1.0
DOWN, SLOW = "bench-down-", "bench-slow-"  # the hosts that are down or slow, by name
PROBLEM_HOSTS = 2  # of each, beside half the fleet that kept its period
SLOW_LATENCY_S = 0.5  # a slow host's time per host command
REDIS_LOCK = "/tmp/specadmin-qcluster-redis-13.lock"  # its default database's (REDIS_DBS)


# -- inside the cluster -----------------------------------------------------------------


def run_cluster() -> None:
    """`manage.py qcluster`, its checks reaching fake hosts (forked workers inherit it)."""
    import django  # noqa: PLC0415 (after the environment is set)

    django.setup()
    from django.core.management import call_command  # noqa: PLC0415

    from hostops.channel import HostUnreachable  # noqa: PLC0415
    from tests.doubles.watch_host import FakeHostTransport  # noqa: PLC0415
    from tests.watchdog.helpers import PORT, healthy_fake  # noqa: PLC0415
    from watchdog import runner  # noqa: PLC0415

    latency = float(os.environ["WATCH_BENCH_LATENCY_S"])
    log_dir = Path(os.environ["WATCH_BENCH_LOG_DIR"])

    def fake_transport(host: Any, **kwargs: Any) -> FakeHostTransport:
        with open(log_dir / f"checks-{os.getpid()}.log", "a") as out:
            out.write(f"{host.name} {time.time():.3f}\n")
        if host.name.startswith(DOWN):  # as a host that does not answer: the whole timeout
            time.sleep(float(kwargs.get("connect_timeout", 5.0)))
            raise HostUnreachable(f"{host.name}: timed out (down, in this benchmark)")
        fake = healthy_fake()
        # Busy and making progress: a counter that stood still with a request running
        # would be a hung engine, and its check at the window's end an extra check.
        fake.servers[PORT].generated = time.time() * 10
        fake.latency_s = SLOW_LATENCY_S if host.name.startswith(SLOW) else latency
        return FakeHostTransport(fake)

    runner.transport_for = fake_transport  # type: ignore[attr-defined]
    call_command("qcluster")


def run_dispatch() -> None:
    import django  # noqa: PLC0415

    django.setup()
    from watchdog.dispatch import run_dispatcher  # noqa: PLC0415

    run_dispatcher(seconds=float(os.environ["WATCH_BENCH_DISPATCH_S"]), tick=TICK_S)


# -- the driver -------------------------------------------------------------------------


def manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, timeout=600)


def setup_env(
    base: dict[str, str], workdir: Path, workers: int, latency_s: float
) -> dict[str, str]:
    return {
        **base,
        "DJANGO_SETTINGS_MODULE": "specadmin.settings",
        "Q_WORKERS": str(workers),
        "Q_TIMEOUT": "300",
        "Q_RETRY": "360",
        "PYTHONUNBUFFERED": "1",
        "AUDIT_CHECKPOINT_FILE": str(workdir / "audit-checkpoints.jsonl"),
        "AUDIT_WITNESS_FILE": str(workdir / "audit-witness.jsonl"),
        "WATCH_BENCH_LATENCY_S": str(latency_s),
        "WATCH_BENCH_LOG_DIR": str(workdir),
    }


SEED = """
import sys, django
django.setup()
from django.db import connection
from django_q.models import Schedule
from deploys.models import Host, PushedUnit
from hostops.channel.push import sha256_hex
from tests.watchdog.helpers import TEXT, UNIT
from watchdog.models import HostWatch
n, period, problems = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
Schedule.objects.filter(func="watchdog.tasks.dispatch_task").delete()
healthy = Host.objects.filter(name__regex=r"^bench-[0-9]+$")
have = healthy.count()
hosts = Host.objects.bulk_create(
    [Host(name=f"bench-{i}", address="127.0.0.1", transport="local", gpu_count=8)
     for i in range(have, n)]
)
for prefix in (sys.argv[4], sys.argv[5]):  # the hosts that are down or slow
    for i in range(problems):
        Host.objects.get_or_create(
            name=f"{prefix}{i}",
            defaults={"address": "127.0.0.1", "transport": "local", "gpu_count": 8},
        )
    Host.objects.filter(name__startswith=prefix).update(archived=True)
    Host.objects.filter(name__in=[f"{prefix}{i}" for i in range(problems)]).update(
        archived=False
    )
PushedUnit.objects.bulk_create(
    [PushedUnit(host=h, unit_name=UNIT, text=TEXT, sha256=sha256_hex(TEXT.encode()))
     for h in Host.objects.filter(pushed_units__isnull=True)]
)
Host.objects.filter(name__in=[f"bench-{i}" for i in range(n, have)]).update(archived=True)
Host.objects.filter(name__in=[f"bench-{i}" for i in range(n)]).update(archived=False)
from watchdog.claims import ensure_watches
ensure_watches()
from django_q.brokers import get_broker
get_broker().purge_queue()  # checks the last phase left queued
HostWatch.objects.update(claimed_by="", claimed_until=None)  # and their claims
from datetime import timedelta
from django.utils import timezone
now = timezone.now()
watches = list(HostWatch.objects.filter(host__archived=False).order_by("pk"))
for i, w in enumerate(watches):  # phases spread over the period, as ensure_watches does
    w.period_s, w.claimed_by, w.claimed_until = period, "", None
    w.next_due = now + timedelta(seconds=period * i / max(len(watches), 1))
HostWatch.objects.bulk_update(watches, ["period_s", "next_due", "claimed_by", "claimed_until"])
print(healthy.filter(archived=False).count())
"""


def seed(env: dict[str, str], n: int, period: int, problems: int = 0) -> None:
    """`n` healthy hosts due over one period, and `problems` hosts each down and slow."""
    out = subprocess.run(
        [sys.executable, "-c", SEED, str(n), str(period), str(problems), DOWN, SLOW],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=600,
        capture_output=True,
        text=True,
    )
    if int(out.stdout.strip().splitlines()[-1]) != n:
        raise SystemExit(f"seeding {n} hosts failed: {out.stdout} {out.stderr}")


def checks_logged(workdir: Path) -> list[tuple[str, float]]:
    found = []
    for path in workdir.glob("checks-*.log"):
        for line in path.read_text().splitlines():
            host, at = line.split()
            found.append((host, float(at)))
    for path in workdir.glob("checks-*.log"):
        path.unlink()
    return sorted(found, key=lambda c: c[1])


@contextlib.contextmanager
def cluster(env: dict[str, str], workdir: Path) -> Any:
    log = open(workdir / "qcluster.log", "a")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, __file__, "--cluster"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        time.sleep(4)  # the cluster forks its workers
        yield proc
    finally:
        stop_cluster(proc)
        log.close()


def dispatch_for(env: dict[str, str], workdir: Path, seconds: float) -> None:
    with open(workdir / "dispatch.log", "a") as log:
        subprocess.run(
            [sys.executable, __file__, "--dispatch"],
            cwd=ROOT,
            env={**env, "WATCH_BENCH_DISPATCH_S": str(seconds)},
            check=True,
            timeout=seconds + 120,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def capacity(env: dict[str, str], workdir: Path, hosts: int, seconds: float) -> float:
    """Checks per second with every host always due."""
    seed(env, hosts, 1)
    checks_logged(workdir)
    with cluster(env, workdir):
        started = time.time()
        dispatch_for(env, workdir, seconds)
        ended = time.time()
    done = [c for c in checks_logged(workdir) if started + 5 <= c[1] <= ended]
    return len(done) / max(ended - started - 5, 1)


def verify(
    env: dict[str, str], workdir: Path, hosts: int, seconds: float, problems: int = 0
) -> tuple[bool, str]:
    """Every healthy host checked once per period, never twice, over `seconds`, beside
    `problems` hosts that are down and as many that are slow."""
    seed(env, hosts, PERIOD_S, problems)
    checks_logged(workdir)
    with cluster(env, workdir):
        started = time.time()
        dispatch_for(env, workdir, seconds)
    by_host: dict[str, list[float]] = defaultdict(list)
    for host, at in checks_logged(workdir):
        if not host.startswith((DOWN, SLOW)):
            by_host[host].append(at)
    extra = len(by_host) - hosts  # archived hosts checked: a bug, reported as one
    if extra > 0:
        return False, f"{extra} hosts outside the fleet were checked"
    ended = time.time()
    missing = hosts - len(by_host)
    gaps = [b - a for times in by_host.values() for a, b in itertools.pairwise(times)]
    # Not checked for longer than a period (+ 2 ticks + 1 s), counting the start and the
    # end of the run too; and never more often than once a period: a host is due one
    # period after it was due (watchdog.claims), so its checks may come up to a queue's
    # delay early or late, but no more of them than periods.
    edges = [t[0] - started for t in by_host.values()]
    edges += [ended - t[-1] for t in by_host.values()]
    longest = max(gaps + edges, default=seconds)
    shortest = min(gaps, default=PERIOD_S)
    most = max((len(t) for t in by_host.values()), default=0)
    allowed = int(seconds // PERIOD_S) + 1
    limit = PERIOD_S + 2 * TICK_S + 1
    ok = not missing and longest <= limit and most <= allowed and shortest >= PERIOD_S / 2
    why = (
        f"{hosts} hosts: {sum(map(len, by_host.values()))} checks, {missing} never checked, "
        f"at most {most} checks of a host (allowed {allowed}), gaps {shortest:.1f}–"
        f"{longest:.1f} s (allowed {PERIOD_S / 2:.0f}–{limit:.0f})"
    )
    return ok, why


def measure(name: str, env: dict[str, str], workdir: Path, args: argparse.Namespace) -> int:
    print(f"== {name}: migrating", flush=True)
    manage(env, "migrate", "--noinput", "-v0", "--skip-checks")
    rate = capacity(env, workdir, args.capacity_hosts, args.capacity_s)
    per_worker = rate / args.workers
    print(
        f"{name}: {rate:.1f} checks/s with {args.workers} workers = {per_worker:.1f} hosts "
        f"checked per second per worker (latency {args.latency_ms:g} ms per host operation)",
        flush=True,
    )
    n = int(rate * PERIOD_S * 0.8)
    for _ in range(3):
        ok, why = verify(env, workdir, n, args.verify_s)
        print(f"{name}: verify {why}: {'kept' if ok else 'MISSED'}", flush=True)
        if ok:
            isolation(name, env, workdir, n // 2, args.verify_s)
            return n
        n = int(n * 0.8)
    return 0


def isolation(name: str, env: dict[str, str], workdir: Path, hosts: int, seconds: float) -> None:
    """Half that fleet beside hosts that are down (each check waits out the connection's
    timeout) and hosts that are slow: the healthy ones still keep their period."""
    ok, why = verify(env, workdir, hosts, seconds, PROBLEM_HOSTS)
    print(
        f"{name}: beside {PROBLEM_HOSTS} hosts down and {PROBLEM_HOSTS} slow "
        f"({SLOW_LATENCY_S:g} s a host command): {why}: {'kept' if ok else 'MISSED'}",
        flush=True,
    )


@contextlib.contextmanager
def postgres_redis(pg_url: str, redis_url: str) -> Any:
    import psycopg  # noqa: PLC0415
    import redis  # noqa: PLC0415

    lock = open(REDIS_LOCK, "w")  # noqa: SIM115
    fcntl.flock(lock, fcntl.LOCK_EX)
    name = f"specadmin_watch_bench_{os.getpid()}"
    queue = redis.Redis.from_url(redis_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        queue.flushdb()
        parsed = urllib.parse.urlsplit(pg_url)
        yield {
            "DATABASE_URL": urllib.parse.urlunsplit(parsed._replace(path=f"/{name}")),
            "REDIS_URL": redis_url,
        }
    finally:
        queue.flushdb()
        queue.close()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        lock.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cluster", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--dispatch", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--latency-ms", type=float, default=5.0)
    parser.add_argument("--capacity-hosts", type=int, default=600)
    parser.add_argument("--capacity-s", type=float, default=30.0)
    parser.add_argument("--verify-s", type=float, default=65.0)
    parser.add_argument("--only", choices=("sqlite", "postgres"))
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/13")
    args = parser.parse_args()
    if args.cluster:
        return run_cluster()
    if args.dispatch:
        return run_dispatch()
    base = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    results: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="watch-bench-") as tmp:
        if args.only != "postgres":
            work = Path(tmp) / "sqlite"
            work.mkdir()
            env = setup_env(
                {**base, "DATABASE_URL": f"sqlite:///{work / 'db.sqlite3'}"},
                work,
                args.workers,
                args.latency_ms / 1000,
            )
            results["sqlite"] = measure("SQLite+ORM", env, work, args)
        if args.only != "sqlite":
            work = Path(tmp) / "postgres"
            work.mkdir()
            with postgres_redis(args.pg_url, args.redis_url) as urls:
                env = setup_env({**base, **urls}, work, args.workers, args.latency_ms / 1000)
                results["postgres"] = measure("PostgreSQL+Redis", env, work, args)
    print(json.dumps(results))
    print(
        f"RESULT max hosts at a 30 s period: {results.get('sqlite', 'not run')} (SQLite+ORM), "
        f"{results.get('postgres', 'not run')} (PostgreSQL+Redis)"
    )


if __name__ == "__main__":
    main()
