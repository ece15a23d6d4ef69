"""Real `manage.py qcluster` workers for tests, on both setups: (a) a SQLite file +
django-q2's ORM broker, (b) PostgreSQL + Redis.

Fixtures (offered to the tests through tests/deploys/conftest.py): `qsetup` (parametrized
over both setups), `start_clusters`, `jobhost`. Which scenario runs where, to keep CI within
its 30 minutes on 2 cores: on both, every request exactly once across workers and the
seed's trial; on SQLite + ORM (the default install), a worker killed mid-job, the task
allowlist, a worker killed mid-trial, a rollout aborted mid-batch; on PostgreSQL + Redis
(scale-out), the pipeline's leftover kill / start failure / rollback / cancel, the seed's
rollback, a cancel during a trial's readiness, a worker killed mid-rollout. Helpers
`manage` and `python` run Django code in subprocesses against the setup's database.
"""

from __future__ import annotations

import contextlib
import fcntl
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
from typing import IO, Any

import psycopg
import pytest
import redis

from tests.deploys.django_scripts import run_script, stop_runners
from tests.testhost.host import TestHost

ROOT = Path(__file__).resolve().parents[2]
PG_ADMIN_URL = os.environ.get(
    "QCLUSTER_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
REDIS_BASE_URL = os.environ.get("QCLUSTER_REDIS_URL", "redis://127.0.0.1:6379")
# Each test that starts workers on Redis claims one of these databases for itself (one
# lock file each), so two xdist workers or two runs never share one, and neither waits for
# the other (benchmarks/rollout.py claims one too); 12 to 15 are left free (13: the watchdog
# benchmark's default).
REDIS_DBS = range(1, 12)
PIPELINE = [
    "host_lock",
    "preflight",
    "vllm_check",
    "push",
    "daemon_reload",
    "stop",
    "gpu_clean",
    "start",
    "journal_check",
    "readiness",
]
# Our jobs' tasks (the workers also run schedules: housekeeping, audit checkpoints).
TASKS = (
    "SELECT count(*) FROM django_q_task WHERE func IN "
    "('deploys.jobs.tasks.deploy_task', 'deploys.jobs.tasks.probe_task')"
)
UNFINISHED = "SELECT count(*) FROM deploys_deployrequest WHERE status IN ('approved', 'running')"


@dataclass
class Setup:
    """One database + broker for workers, and a way for this test to watch it."""

    name: str
    env: dict[str, str]
    count_tasks: Callable[[], int]
    count_unfinished: Callable[[], int]
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
    """The JSON on the last line `script` printed, run against `env`'s database in a
    Django process kept for it (tests.deploys.django_scripts says why)."""
    return json.loads(run_script(env, script, *args).strip().splitlines()[-1])


def base_env() -> dict[str, str]:
    # Workers as in production: a DJANGO_ALLOW_ASYNC_UNSAFE in the environment (the
    # browser tests set it for themselves) would hide ORM calls made inside an event loop.
    dropped = ("DATABASE_URL", "REDIS_URL", "DJANGO_ALLOW_ASYNC_UNSAFE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    # Long enough for a deploy job of the test profiles with its rollback (the runner
    # refuses jobs that could outlive it), still retry > timeout (checked at start).
    env.update(
        DJANGO_SETTINGS_MODULE="specadmin.settings",
        Q_WORKERS="2",
        Q_TIMEOUT="1200",
        Q_RETRY="1300",
        PYTHONUNBUFFERED="1",
        # The watchdog's dispatcher would hold one of the two workers (docs/watchdog.md).
        WATCHDOG_ENABLED="0",
    )
    return env


@pytest.fixture
def sqlite_orm(tmp_path: Path) -> Iterator[Setup]:
    path = tmp_path / "jobs.sqlite3"
    env = {
        **base_env(),
        "DATABASE_URL": f"sqlite:///{path}",
        "AUDIT_CHECKPOINT_FILE": str(tmp_path / "audit-checkpoints.jsonl"),
        "AUDIT_WITNESS_FILE": str(tmp_path / "audit-witness.jsonl"),
    }
    manage(env, "migrate", "--noinput", "-v0", "--skip-checks")

    def count_tasks() -> int:
        with contextlib.closing(sqlite3.connect(path, timeout=20)) as db:
            return db.execute(TASKS).fetchone()[0]

    def count_unfinished() -> int:
        with contextlib.closing(sqlite3.connect(path, timeout=20)) as db:
            return db.execute(UNFINISHED).fetchone()[0]

    yield Setup("sqlite+orm", env, count_tasks, count_unfinished)
    stop_runners(env["DATABASE_URL"])


def claim_redis_db(timeout: float = 1800) -> tuple[int, IO[str]]:
    """A Redis database of `REDIS_DBS` no other test or run holds, and its held lock (closing
    the file releases it)."""
    deadline = time.monotonic() + timeout
    while True:
        for number in REDIS_DBS:
            lock_file = open(f"/tmp/specadmin-qcluster-redis-{number}.lock", "w")  # noqa: SIM115
            try:
                fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock_file.close()
                continue
            return number, lock_file
        assert time.monotonic() < deadline, f"every Redis database of {REDIS_DBS} stayed taken"
        time.sleep(0.5)


@pytest.fixture
def postgres_redis(tmp_path: Path) -> Iterator[Setup]:
    redis_db, lock_file = claim_redis_db()
    name = f"specadmin_qc_{secrets.token_hex(4)}"
    queue = redis.Redis.from_url(f"{REDIS_BASE_URL}/{redis_db}")
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
            "REDIS_URL": f"{REDIS_BASE_URL}/{redis_db}",
            "AUDIT_CHECKPOINT_FILE": str(tmp_path / "audit-checkpoints.jsonl"),
            "AUDIT_WITNESS_FILE": str(tmp_path / "audit-witness.jsonl"),
        }
        manage(env, "migrate", "--noinput", "-v0", "--skip-checks")

        def count_tasks() -> int:
            with psycopg.connect(url) as db:
                return db.execute(TASKS).fetchone()[0]

        def count_unfinished() -> int:
            with psycopg.connect(url) as db:
                return db.execute(UNFINISHED).fetchone()[0]

        yield Setup("postgres+redis", env, count_tasks, count_unfinished)
    finally:
        stop_runners(PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}")
        queue.flushdb()
        queue.close()
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        lock_file.close()


@pytest.fixture(params=["sqlite_orm", "postgres_redis"])
def qsetup(request: pytest.FixtureRequest) -> Setup:
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


@pytest.fixture
def jobhost(module_testhost: TestHost) -> Iterator[TestHost]:
    """The module's own host, with no service left running after a test."""
    yield module_testhost
    module_testhost.nsenter(["sh", "-c", "systemctl stop 'vllm-*' 2>/dev/null; true"])
