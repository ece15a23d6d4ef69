"""Many writers at once (web processes, qcluster workers) still build one unbroken chain."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.db import connection, connections

from audit.models import AuditEvent
from audit.services import record
from audit.verify import verify_chain
from tests.audit.helpers import intact

ROOT = Path(__file__).resolve().parents[2]
THREADS = 8
EVENTS_PER_THREAD = 15


@pytest.mark.django_db(transaction=True)
def test_concurrent_threads_keep_the_chain_valid(alice):
    """In this process, on the test database itself (PostgreSQL, or a file SQLite)."""
    if connection.vendor == "sqlite" and connection.is_in_memory_db():
        pytest.skip(
            "in-memory SQLite's shared cache fails concurrent writers instead of waiting; "
            "test_threads_in_one_process_keep_the_chain_valid covers SQLite with a file"
        )
    start = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            start.wait()
            for i in range(EVENTS_PER_THREAD):
                record(kind="job.step_started", actor=alice, payload={"worker": n, "step": i})
        except BaseException as exc:  # reported below, with the thread's traceback lost
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    total = THREADS * EVENTS_PER_THREAD
    assert list(AuditEvent.objects.order_by("id").values_list("id", flat=True)) == list(
        range(1, total + 1)
    )
    assert str(verify_chain()) == intact(total)


WRITER = """
import sys, threading, django
django.setup()
from django.db import connections
from audit.services import record

threads, per_thread = int(sys.argv[1]), int(sys.argv[2])
start, failures = threading.Barrier(threads), []

def work(n):
    try:
        start.wait()
        for i in range(per_thread):
            record(kind="job.step_finished", actor=None, payload={"thread": n, "step": i})
    except BaseException as exc:
        failures.append(repr(exc))
    finally:
        connections.close_all()

workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
for w in workers:
    w.start()
for w in workers:
    w.join()
sys.exit("; ".join(failures) or 0)
"""


@pytest.fixture(scope="module")
def migrated_sqlite_file(tmp_path_factory) -> Path:
    """A migrated SQLite file with the project's settings (WAL, IMMEDIATE, busy timeout)."""
    path = tmp_path_factory.mktemp("audit-db") / "template.sqlite3"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{path}"}
    migrate = [sys.executable, "manage.py", "migrate", "--noinput", "-v0", "--skip-checks"]
    subprocess.run(migrate, cwd=ROOT, env=env, check=True)
    return path


@pytest.fixture
def writer_env(request, tmp_path) -> dict[str, str]:
    """Environment for child processes that write to a database this test can check.

    PostgreSQL: this run's test database (committed rows; the transactional test flushes
    them afterwards). SQLite: the test database lives in this process's memory, and its
    shared cache answers concurrent writers with "table is locked" instead of waiting,
    so children get a fresh copy of a migrated file database instead.
    """
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "specadmin.settings",
        "AUDIT_CHECKPOINT_FILE": str(tmp_path / "audit-checkpoints.jsonl"),
        "AUDIT_WITNESS_FILE": str(tmp_path / "audit-witness.jsonl"),
    }
    if connection.vendor == "postgresql":
        s = connection.settings_dict
        env["DATABASE_URL"] = f"postgres://{s['USER']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"
    else:
        template = request.getfixturevalue("migrated_sqlite_file")
        copy = tmp_path / "audit.sqlite3"
        shutil.copyfile(template, copy)
        copy.chmod(0o600)  # a copy gets the umask's mode; the server refuses one others can read
        env["DATABASE_URL"] = f"sqlite:///{copy}"
    return env


def run_writers(env: dict[str, str], *, processes: int, threads: int, per_thread: int) -> None:
    children = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(threads), str(per_thread)],
            cwd=ROOT,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    for child in children:
        _, stderr = child.communicate(timeout=120)
        assert child.returncode == 0, stderr


def manage_verifyaudit(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The real command; system checks skipped so other apps' work in progress can't interfere."""
    return subprocess.run(
        [sys.executable, "manage.py", "verifyaudit", "--skip-checks"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )


@pytest.mark.django_db(transaction=True)
def test_threads_in_one_process_keep_the_chain_valid(writer_env):
    run_writers(writer_env, processes=1, threads=THREADS, per_thread=EVENTS_PER_THREAD)

    verified = manage_verifyaudit(writer_env)
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.strip() == intact(THREADS * EVENTS_PER_THREAD)


@pytest.mark.django_db(transaction=True)
def test_several_processes_with_threads_keep_the_chain_valid(writer_env):
    run_writers(writer_env, processes=4, threads=3, per_thread=10)

    verified = manage_verifyaudit(writer_env)
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.strip() == intact(120)


TAMPER = """
import django
django.setup()
from tests.audit.helpers import tamper
tamper("UPDATE audit_auditevent SET actor_name = 'mallory' WHERE id = 2")
"""


@pytest.mark.django_db(transaction=True)
def test_manage_py_verifyaudit_exits_1_and_names_the_edited_row(writer_env):
    run_writers(writer_env, processes=1, threads=1, per_thread=3)
    subprocess.run([sys.executable, "-c", TAMPER], cwd=ROOT, env=writer_env, check=True)

    verified = manage_verifyaudit(writer_env)
    assert verified.returncode == 1
    assert "event #2 (job.step_finished at" in verified.stderr
    assert "stored hash does not match its content" in verified.stderr
