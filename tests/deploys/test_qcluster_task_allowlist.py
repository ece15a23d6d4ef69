"""What a database (or Redis) writer puts in django-q2's tables does not run: real
`manage.py qcluster` workers on both setups (SQLite + ORM broker, PostgreSQL + Redis).

The attack as it was done: a `django_q_schedule` row with `func='subprocess.run'` and a
command as its args, and task packages put straight into the queue (the `django_q_ormq`
table, or the Redis list), signed with the server's SECRET_KEY as if it had leaked. Each
would create a marker file. Nothing may run; each refusal is an audit event; specadmin's
own schedule (the audit checkpoint) still runs in the same scheduler pass.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from deploys.jobs.allowlist import allowed_tasks
from tests.deploys.qcluster_support import Setup, manage, python

pytestmark = pytest.mark.qcluster

ATTACK = """
import json, os, sys, django
django.setup()
from datetime import timedelta
from django.conf import settings
from django.db import connection
from django.utils import timezone
from django_q.signing import SignedPackage

markers = json.loads(sys.argv[1])
past = timezone.now() - timedelta(minutes=1)
stored_past = connection.ops.adapt_datetimefield_value(past)  # as the ORM writes it


class RunsAShellCommand:  # a pickle that runs code while it is read
    def __reduce__(self):
        return (os.system, (f"touch {markers['pickle']}",))


with connection.cursor() as cursor:
    for name, kwargs in [("schedule", None), ("sync", "{'q_options': {'sync': True}}")]:
        cursor.execute(
            "INSERT INTO django_q_schedule (name, func, args, kwargs, schedule_type, minutes, "
            "repeats, next_run) VALUES (%s, 'subprocess.run', %s, %s, 'I', 60, -1, %s)",
            [f"hostile {name}", repr(["touch", markers[name]]), kwargs, stored_past],
        )
packages = [
    {"func": "subprocess.run", "args": (["touch", markers["queue"]],)},
    {"func": RunsAShellCommand(), "args": ()},
]
for number, package in enumerate(packages):
    package.update(id=f"{number:032x}", name=f"hostile-{number}", kwargs={}, started=past)
    signed = SignedPackage.dumps(package)
    if "redis" in settings.Q_CLUSTER:
        import redis
        redis.Redis.from_url(settings.Q_CLUSTER["redis"]).rpush("django_q:specadmin:q", signed)
    else:
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO django_q_ormq (key, payload, lock) VALUES ('specadmin', %s, %s)",
                [signed, stored_past],
            )
print(json.dumps("ok"))
"""

REPORT = """
import json, django
django.setup()
from audit.models import AuditEvent
from audit.verify import verify_chain
from django_q.models import OrmQ, Schedule, Task

print(json.dumps({
    "refused": [
        [e.payload["where"], e.payload.get("group", ""), e.payload.get("func", ""),
         e.payload["reason"]]
        for e in AuditEvent.objects.filter(kind="task.refused").order_by("id")
    ],
    "ran": sorted(set(Task.objects.values_list("func", flat=True))),
    "hostile_schedules": Schedule.objects.filter(func="subprocess.run").count(),
    "queued": OrmQ.objects.count(),
    "chain": str(verify_chain()),
}))
"""

REFUSED_EVENTS = "SELECT count(*) FROM audit_auditevent WHERE kind = 'task.refused'"
CHECKPOINTED = (
    "SELECT count(*) FROM django_q_task WHERE func = 'audit.tasks.checkpoint_task' AND success"
)


def count(setup: Setup, sql: str) -> int:
    url = setup.env["DATABASE_URL"]
    if url.startswith("sqlite:///"):
        with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///"), timeout=20)) as db:
            return db.execute(sql).fetchone()[0]
    with psycopg.connect(url) as db:
        return db.execute(sql).fetchone()[0]


# One setup for this scenario (tests/deploys/qcluster_support.py says which runs where).
@pytest.mark.parametrize("qsetup", ["sqlite_orm"], indirect=True)
def test_hostile_schedules_and_queued_tasks_never_run_and_are_audited(
    qsetup: Setup,
    start_clusters: Callable[[Setup, int], list[subprocess.Popen]],
    tmp_path: Path,
) -> None:
    markers = {name: str(tmp_path / f"ran-{name}") for name in ("schedule", "sync", "queue")}
    markers["pickle"] = str(tmp_path / "ran-pickle")
    python(qsetup.env, ATTACK, json.dumps(markers))
    (cluster,) = start_clusters(qsetup, 1)

    # The pusher takes the queued packages at once; the scheduler's first pass (about 30 s
    # after start) takes the schedules, specadmin's checkpoint among them.
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline and (
        count(qsetup, REFUSED_EVENTS) < 4 or count(qsetup, CHECKPOINTED) < 1
    ):
        assert cluster.poll() is None, "the qcluster process died"
        time.sleep(1)
    report = python(qsetup.env, REPORT)

    assert [name for name, path in markers.items() if Path(path).exists()] == []
    not_ours = "subprocess.run is not one of specadmin's tasks"
    assert sorted(report["refused"]) == [
        ["enqueue", "hostile schedule", "subprocess.run", not_ours],  # group: the schedule
        ["enqueue", "hostile sync", "subprocess.run", not_ours],  # it asked to run inline
        ["queue", "", "", "its pickle names posix.system; specadmin stores plain data only"],
        ["queue", "", "subprocess.run", not_ours],
    ]
    assert "audit.tasks.checkpoint_task" in report["ran"]
    assert set(report["ran"]) <= allowed_tasks()
    assert report["hostile_schedules"] == 2 and report["queued"] == 0
    assert report["chain"].startswith("OK: ")
    assert manage(qsetup.env, "verifyaudit", "--skip-checks").startswith("OK: ")
