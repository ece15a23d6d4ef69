"""The job system for real: `manage.py qcluster` worker processes on both setups.

(a) SQLite file + django-q2's ORM broker (the one-machine default), (b) PostgreSQL +
Redis (scale-out). Three clusters of two workers each take deploy jobs for approved
requests against the real test host; every job is also delivered a second time (a double
click, a redelivery). Each request must run exactly once across all workers, one job at a
time on the host, and the audit chain must verify.

Workers need a database they share with this process, so each test migrates its own
(a temp SQLite file, or a fresh PostgreSQL database) and talks to it from subprocesses.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.testhost.host import TestHost

pytestmark = [pytest.mark.qcluster, pytest.mark.testhost]

ROOT = Path(__file__).resolve().parents[2]
PG_ADMIN_URL = os.environ.get(
    "QCLUSTER_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
REDIS_BASE_URL = os.environ.get("QCLUSTER_REDIS_URL", "redis://127.0.0.1:6379")
REDIS_DB = 14  # Makefile's test-postgres uses 15
CLUSTERS = 3
REQUESTS = 5
FINAL = ("succeeded", "failed", "void")

SETUP = """
import json, sys, django
django.setup()
from deploys.jobs.queue import enqueue_deploy, enqueue_probe
from tests.deploys.helpers import approved_request, make_host, make_users
from tests.testhost.host import TestHost

testhost = TestHost.from_json(json.loads(sys.argv[1]))
requester, approver = make_users()
host = make_host(testhost)
# Approving enqueues the job (on commit), as the web UI does...
ids = [approved_request(host, requester, approver).pk for _ in range(int(sys.argv[2]))]
# ...and every job is delivered a second time.
for pk in ids:
    enqueue_deploy(pk)
enqueue_probe(host.pk, approver.pk)
print(json.dumps({"requests": ids, "host": host.pk}))
"""

REPORT = """
import json, sys, django
django.setup()
from collections import Counter
from audit.models import AuditEvent
from audit.verify import verify_chain
from deploys.models import DeployRequest, Host, JobStep, PushedUnit
from django_q.models import Task

host = Host.objects.get(pk=int(sys.argv[1]))
jobs = {}
for r in DeployRequest.objects.order_by("pk"):
    steps = list(JobStep.objects.filter(request=r).order_by("pk"))
    lock = next((s for s in steps if s.name == "host_lock"), None)
    jobs[r.pk] = {
        "status": r.status,
        "reason": r.status_reason,
        "steps": [[s.name, s.status] for s in steps],
        "held": [lock.finished_at.timestamp(), r.finished_at.timestamp()] if lock else None,
        "worker": lock.result.get("owner", "") if lock else "",
        "pushes": PushedUnit.objects.filter(request=r).count(),
        "started": AuditEvent.objects.filter(
            kind="deploy.started", object_id=str(r.pk)
        ).count(),
    }
print(json.dumps({
    "jobs": jobs,
    "tasks": list(Task.objects.values_list("func", "success", "cluster")),
    "systemd_version": host.systemd_version,
    "chain": str(verify_chain()),
}))
"""


@dataclass
class Setup:
    """One database + broker for workers, and a way for this test to watch it."""

    name: str
    env: dict[str, str]
    count_tasks: Callable[[], int]
    cleanups: list[Callable[[], None]] = field(default_factory=list)


def manage(env: dict[str, str], *args: str, timeout: float = 120) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def python(env: dict[str, str], script: str, *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    # Short enough to notice a hang, still retry > timeout (checked at worker start).
    env.update(
        DJANGO_SETTINGS_MODULE="specadmin.settings",
        Q_WORKERS="2",
        Q_TIMEOUT="120",
        Q_RETRY="150",
        PYTHONUNBUFFERED="1",
    )
    return env


@pytest.fixture
def sqlite_orm(tmp_path: Path) -> Iterator[Setup]:
    path = tmp_path / "jobs.sqlite3"
    env = {
        **base_env(),
        "DATABASE_URL": f"sqlite:///{path}",
        "AUDIT_CHECKPOINT_FILE": str(tmp_path / "audit-checkpoints.jsonl"),
    }
    manage(env, "migrate", "--noinput", "-v0", "--skip-checks")

    def count_tasks() -> int:
        with contextlib.closing(sqlite3.connect(path, timeout=20)) as db:
            return db.execute("SELECT count(*) FROM django_q_task").fetchone()[0]

    yield Setup("sqlite+orm", env, count_tasks)


@pytest.fixture
def postgres_redis(tmp_path: Path) -> Iterator[Setup]:
    import psycopg
    import redis

    # One Redis database for this test at a time on this machine (xdist, parallel runs).
    lock_file = open("/tmp/specadmin-qcluster-redis.lock", "w")  # noqa: SIM115
    fcntl.flock(lock_file, fcntl.LOCK_EX)
    name = f"specadmin_qc_{secrets.token_hex(4)}"
    queue = redis.Redis.from_url(f"{REDIS_BASE_URL}/{REDIS_DB}")
    try:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        lock_file.close()
        pytest.skip(f"PostgreSQL not reachable at {PG_ADMIN_URL}: {exc}")
    try:
        queue.flushdb()
        url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
        env = {
            **base_env(),
            "DATABASE_URL": url,
            "REDIS_URL": f"{REDIS_BASE_URL}/{REDIS_DB}",
            "AUDIT_CHECKPOINT_FILE": str(tmp_path / "audit-checkpoints.jsonl"),
        }
        manage(env, "migrate", "--noinput", "-v0", "--skip-checks")

        def count_tasks() -> int:
            with psycopg.connect(url) as db:
                return db.execute("SELECT count(*) FROM django_q_task").fetchone()[0]

        yield Setup("postgres+redis", env, count_tasks)
    finally:
        queue.flushdb()
        queue.close()
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        lock_file.close()


@pytest.fixture(params=["sqlite_orm", "postgres_redis"])
def setup(request: pytest.FixtureRequest) -> Setup:
    return request.getfixturevalue(request.param)


@pytest.fixture
def start_clusters(tmp_path: Path) -> Iterator[Callable[[Setup, int], list[subprocess.Popen]]]:
    """Start `manage.py qcluster` processes; always stopped (their whole process groups)."""
    started: list[tuple[subprocess.Popen, Path]] = []

    def start(setup: Setup, count: int) -> list[subprocess.Popen]:
        procs = []
        for i in range(count):
            log = tmp_path / f"qcluster-{setup.name}-{i}.log"
            with open(log, "w") as out:
                proc = subprocess.Popen(
                    [sys.executable, "manage.py", "qcluster"],
                    cwd=ROOT,
                    env=setup.env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own group: the workers it forks go too
                )
            started.append((proc, log))
            procs.append(proc)
        return procs

    yield start
    for proc, _ in started:  # the cluster stops its own workers (signalling them breaks that)
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for proc, _ in started:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(max(0.1, deadline - time.monotonic()))
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # stragglers of the group, if any
        proc.wait(10)


def test_every_request_runs_exactly_once_across_workers(
    setup: Setup,
    testhost: TestHost,
    start_clusters: Callable[[Setup, int], list[subprocess.Popen]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    started = time.monotonic()
    clusters = start_clusters(setup, CLUSTERS)
    made = python(setup.env, SETUP, json.dumps(testhost.to_json()), str(REQUESTS))
    expected_tasks = 2 * REQUESTS + 1

    deadline = time.monotonic() + 60
    while setup.count_tasks() < expected_tasks and time.monotonic() < deadline:
        assert all(c.poll() is None for c in clusters), "a qcluster process died"
        time.sleep(0.5)
    elapsed = time.monotonic() - started
    report = python(setup.env, REPORT, str(made["host"]))

    jobs = {int(pk): job for pk, job in report["jobs"].items()}
    assert sorted(jobs) == sorted(made["requests"])
    assert {pk: j["status"] for pk, j in jobs.items()} == dict.fromkeys(jobs, "succeeded"), jobs
    for job in jobs.values():
        assert job["pushes"] == 1 and job["started"] == 1, job
        assert [s for s, _ in job["steps"]] == ["host_lock", "preflight", "push", "daemon_reload"]
    held = sorted(j["held"] for j in jobs.values())
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(held)), (
        f"two jobs held the host at once: {held}"
    )
    tasks = report["tasks"]
    assert len(tasks) == expected_tasks and all(ok for _, ok, _ in tasks), tasks
    assert report["systemd_version"] and report["systemd_version"] >= 252, "probe job ran"
    assert report["chain"].startswith("OK: ")
    assert manage(setup.env, "verifyaudit", "--skip-checks").startswith("OK: ")
    with capsys.disabled():
        workers = {j["worker"].rsplit(":", 1)[0] for j in jobs.values()}
        print(
            f"\n[qcluster {setup.name}] {REQUESTS} requests x2 deliveries + 1 probe on "
            f"{CLUSTERS} clusters: done in {elapsed:.1f}s, jobs ran in {len(workers)} "
            f"worker processes; {report['chain']}"
        )
