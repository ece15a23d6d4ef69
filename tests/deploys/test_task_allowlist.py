"""Workers run only specadmin's own tasks (deploys/jobs/allowlist.py, brokers.py).

Packages go the way django-q2 moves them: `async_task` → the broker's `enqueue` → the
queue (the ORM broker's `django_q_ormq` table here, on either database) → `dequeue` →
django-q2's own `worker()`. A hostile package is put where a database writer would put
it. The same with real `qcluster` processes, schedules included, on both brokers:
tests/deploys/test_qcluster_task_allowlist.py.
"""

from __future__ import annotations

import base64
import os
import pickle
import pydoc
from datetime import timedelta
from multiprocessing import Queue, Value
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone
from django_q import core_signing
from django_q.brokers import get_broker
from django_q.models import OrmQ, Schedule, Task
from django_q.monitor import save_task
from django_q.signing import PickleSerializer, SignedPackage
from django_q.tasks import async_task
from django_q.worker import worker

from audit.checkpoints import read_checkpoints
from audit.models import AuditEvent, AuditKind
from deploys.jobs import queue
from deploys.jobs.allowlist import ALLOWED_TASKS, allowed_tasks
from deploys.jobs.brokers import AllowListedORM, AllowListedRedis
from fleet import queue as fleet_queue
from watchdog import queue as watchdog_queue

# django-q2's worker closes "old" database connections before each task: outside a test
# transaction, as in a cluster.
TRANSACTIONAL = pytest.mark.django_db(transaction=True)

CHECKPOINT_TASK = "audit.tasks.checkpoint_task"


class RunsAShellCommand:
    """A pickle that runs `touch PATH` while it is being read (no function call needed)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, (f"touch {self.path}",))


def hostile_package(func: object, *args: object, **options: object) -> dict:
    return {
        "id": "f" * 32,
        "name": "nice-task",
        "func": func,
        "args": args,
        "kwargs": {},
        "started": timezone.now(),
        **options,
    }


def put_in_queue(payload: str) -> None:
    """What a database writer does: a row in django-q2's queue table."""
    OrmQ.objects.create(
        key="specadmin", payload=payload, lock=timezone.now() - timedelta(minutes=1)
    )


def enqueue(func: str, *args: object, **options: object) -> None:
    async_task(func, *args, broker=AllowListedORM(), **options)


def run_queue() -> list[dict]:
    """Take what the broker delivers and run it in django-q2's worker, as a cluster does."""
    broker = AllowListedORM()
    delivered = broker.dequeue() or []
    tasks, results = Queue(), Queue()
    for ack_id, signed in delivered:
        task = SignedPackage.loads(signed)
        task["ack_id"] = ack_id
        tasks.put(task)
    tasks.put("STOP")
    worker(tasks, results, Value("f", -1))
    done = [results.get(timeout=30) for _ in delivered]
    for task in done:
        broker.acknowledge(task["ack_id"])
    return done


def refusals() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(kind=AuditKind.TASK_REFUSED).order_by("id"))


# -- the list -------------------------------------------------------------------------


def test_the_allow_list_is_the_task_wrappers_and_each_is_a_function():
    assert sorted(ALLOWED_TASKS) == [
        CHECKPOINT_TASK,
        "deploys.jobs.tasks.deploy_task",
        "deploys.jobs.tasks.expire_stale_requests_task",
        "deploys.jobs.tasks.fail_abandoned_deploys_task",
        "deploys.jobs.tasks.probe_task",
        "notify.tasks.deliver_notifications_task",
    ]
    assert all(callable(pydoc.locate(name)) for name in allowed_tasks())


def test_the_apps_above_deploys_add_only_their_own_task_wrappers():
    # Registered when their apps load (fleet.apps, watchdog.apps): deploys imports neither.
    assert sorted(allowed_tasks() - ALLOWED_TASKS) == [
        "fleet.tasks.advance_rollout_task",
        "fleet.tasks.check_rollouts_task",
        "watchdog.tasks.check_task",
        "watchdog.tasks.dispatch_task",
    ]
    assert all(callable(pydoc.locate(name)) for name in allowed_tasks())


@pytest.mark.django_db  # the migrations' schedules (a transactional test flushes them)
def test_every_task_specadmin_queues_or_schedules_is_on_the_list():
    registered = {fleet_queue.ADVANCE_TASK, watchdog_queue.CHECK_TASK}
    assert {queue.DEPLOY_TASK, queue.PROBE_TASK} | registered <= allowed_tasks()
    scheduled = set(Schedule.objects.values_list("func", flat=True))
    assert scheduled and scheduled <= allowed_tasks()
    assert fleet_queue.CHECK_TASK in scheduled


@pytest.mark.django_db
def test_the_configured_broker_is_the_allow_listed_one(settings):
    expected = AllowListedRedis if "redis" in settings.Q_CLUSTER else AllowListedORM
    assert type(get_broker()) is expected


# -- allowed tasks run ----------------------------------------------------------------


@TRANSACTIONAL
def test_an_allowed_task_goes_through_the_queue_and_runs_in_a_worker(settings):
    enqueue(CHECKPOINT_TASK)
    assert OrmQ.objects.count() == 1

    (done,) = run_queue()

    assert done["success"], done["result"]
    (checkpoint,) = read_checkpoints(Path(settings.AUDIT_CHECKPOINT_FILE))
    assert done["result"] == checkpoint.head_id
    assert OrmQ.objects.count() == 0 and refusals() == []


# -- everything else is refused, logged and audited -----------------------------------


@TRANSACTIONAL
def test_queueing_any_other_function_is_refused_before_it_reaches_the_queue(tmp_path, caplog):
    marker = tmp_path / "ran"
    enqueue("subprocess.run", ["touch", str(marker)])

    assert OrmQ.objects.count() == 0
    (event,) = refusals()
    assert event.payload["where"] == "enqueue"
    assert event.payload["func"] == "subprocess.run"
    assert event.payload["reason"] == "subprocess.run is not one of specadmin's tasks"
    assert str(marker) in event.payload["args"]
    assert "refused a task package (enqueue): subprocess.run is not one" in caplog.text
    assert not marker.exists()


@TRANSACTIONAL
def test_asking_to_run_it_at_once_in_the_calling_process_is_refused_too(tmp_path):
    marker = tmp_path / "ran"
    enqueue("subprocess.run", ["touch", str(marker)], sync=True)

    assert not marker.exists()
    assert [e.payload["func"] for e in refusals()] == ["subprocess.run"]


@TRANSACTIONAL
def test_a_package_written_into_the_queue_table_is_refused_when_taken(tmp_path):
    marker = tmp_path / "ran"
    put_in_queue(SignedPackage.dumps(hostile_package("subprocess.run", ["touch", str(marker)])))

    assert run_queue() == []

    assert not marker.exists()
    assert OrmQ.objects.count() == 0  # removed, never retried
    (event,) = refusals()
    assert (event.payload["where"], event.payload["func"]) == ("queue", "subprocess.run")
    assert event.object_id == "f" * 32


@TRANSACTIONAL
def test_a_pickle_that_runs_code_while_read_is_refused_unread(tmp_path):
    marker = tmp_path / "ran"
    put_in_queue(SignedPackage.dumps(hostile_package(RunsAShellCommand(marker))))

    assert run_queue() == []

    assert not marker.exists()
    (event,) = refusals()
    assert (
        event.payload["reason"] == "its pickle names posix.system; specadmin stores plain data only"
    )
    assert event.object_repr == "(unreadable task package)"


@TRANSACTIONAL
def test_a_package_not_signed_with_the_secret_key_is_refused():
    forged = core_signing.dumps(
        hostile_package(CHECKPOINT_TASK),
        key="an attacker's guess of the secret key",
        salt="specadmin",
        serializer=PickleSerializer,
    )
    put_in_queue(forged)

    assert run_queue() == []
    (event,) = refusals()
    assert event.payload["reason"] == "it is not signed with this server's SECRET_KEY"


@TRANSACTIONAL
@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"hook": "subprocess.run"}, "it names a result hook (subprocess.run)"),
        ({"chain": [("subprocess.run", ("ls",), {})]}, "it carries a chain of further tasks"),
    ],
)
@TRANSACTIONAL
def test_an_allowed_task_with_a_hook_or_a_chain_is_refused(options, reason):
    put_in_queue(SignedPackage.dumps(hostile_package(CHECKPOINT_TASK, **options)))

    assert run_queue() == []
    (event,) = refusals()
    assert event.payload["reason"].startswith(reason)


@TRANSACTIONAL
def test_a_refusal_whose_text_looks_like_a_secret_is_still_audited(tmp_path):
    key_text = "-----BEGIN OPENSSH PRIVATE KEY-----"
    put_in_queue(SignedPackage.dumps(hostile_package("os.system", key_text)))

    assert run_queue() == []
    (event,) = refusals()
    assert set(event.payload) == {"where", "reason", "package_sha256"}
    assert key_text not in str(event.payload)


# -- pickles stored in django_q_task are read as plain data ---------------------------


def hostile_task_row(task_id: str, name: str, marker: Path) -> str:
    """A result row a database writer prepared: its result pickle runs `touch marker`."""
    stored = base64.b64encode(pickle.dumps(RunsAShellCommand(marker))).decode()
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO django_q_task (id, name, func, result, args, kwargs, started, stopped, "
            "success, attempt_count) VALUES (%s, %s, %s, %s, NULL, NULL, %s, %s, %s, 1)",
            [task_id, name, CHECKPOINT_TASK, stored, timezone.now(), timezone.now(), False],
        )
    return stored


@TRANSACTIONAL
def test_a_stored_result_pickle_is_read_as_its_text_not_run(tmp_path):
    marker = tmp_path / "ran"
    stored = hostile_task_row("a" * 32, "hostile", marker)

    assert Task.objects.get(pk="a" * 32).result == stored  # what the admin's lists read
    assert not marker.exists()


@TRANSACTIONAL
def test_the_monitor_saving_a_result_over_a_prepared_row_runs_nothing(tmp_path):
    """django-q2's monitor reads the task's row back (save_task) before it writes the
    result: a row prepared under the id of a queued task (readable in the queue)."""
    marker = tmp_path / "ran"
    enqueue(CHECKPOINT_TASK)
    queued = SignedPackage.loads(OrmQ.objects.get().payload)
    hostile_task_row(queued["id"], queued["name"], marker)

    (done,) = run_queue()
    save_task(done, AllowListedORM())

    assert not marker.exists()
    assert Task.objects.get(pk=queued["id"]).success
