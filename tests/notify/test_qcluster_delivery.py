"""Delivery by real `manage.py qcluster` workers (two clusters of two workers, SQLite + the
ORM broker): each try of each notification is made exactly once, a receiver that answers
500 gets every notification again after the back-off, and nothing is refused by the
allow-list."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections import Counter
from typing import Any

import pytest

from tests.deploys.qcluster_support import Setup, python
from tests.doubles.webhook_receiver import WebhookReceiver

pytestmark = pytest.mark.qcluster
COUNT = 20

ENQUEUE = """
import json, sys, django
django.setup()
from django.contrib.auth import get_user_model
from django.db import transaction
from notify.events import Event
from notify.models import Webhook
from notify.services import enqueue

owner = get_user_model().objects.create_user("olga")
Webhook.objects.create(owner=owner, url=sys.argv[1], events=list(Event.values))
with transaction.atomic():
    for n in range(int(sys.argv[2])):
        enqueue(event=Event.JOB_FAILED, subject=f"message {n}", text="t", payload={}, users=[owner])
print(json.dumps("ok"))
"""

KICK = """
import json, django
django.setup()
from notify.queue import kick_delivery
for _ in range(4):
    kick_delivery()
print(json.dumps("ok"))
"""


def _rows(setup: Setup, sql: str) -> list[Any]:
    path = setup.env["DATABASE_URL"].removeprefix("sqlite:///")
    with contextlib.closing(sqlite3.connect(path, timeout=20)) as db:
        return db.execute(sql).fetchall()


def _wait(setup: Setup, sql: str, expected: Any, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while (got := _rows(setup, sql)) != expected:
        assert time.monotonic() < deadline, got
        time.sleep(0.3)


def test_real_workers_try_each_notification_once_per_try_and_deliver_after_a_500(
    sqlite_orm: Setup, start_clusters: Any
) -> None:
    setup = sqlite_orm
    setup.env.update(NOTIFY_BACKOFF_S="1", NOTIFY_TIMEOUT_S="5")
    with WebhookReceiver() as receiver:
        receiver.fail_first_try = True  # each notification's first try gets a 500
        receiver.delay = 0.02  # so the workers' runs overlap
        start_clusters(setup, 2)
        python(setup.env, ENQUEUE, receiver.url(), str(COUNT))
        python(setup.env, KICK)
        _wait(setup, "SELECT count(*) FROM notify_notification WHERE attempts >= 1", [(COUNT,)])
        time.sleep(1.2)  # the back-off after one failed try
        python(setup.env, KICK)
        _wait(
            setup,
            "SELECT state, attempts, count(*) FROM notify_notification GROUP BY state, attempts",
            [("delivered", 2, COUNT)],
        )
    per_id = Counter(post.body["id"] for post in receiver.posts)
    assert sorted(per_id.values()) == [2] * COUNT  # one failed try and one delivery each
    assert _rows(
        setup, "SELECT status, count(*) FROM notify_deliveryattempt GROUP BY status ORDER BY 1"
    ) == [("delivered", COUNT), ("failed", COUNT)]
    refused = "SELECT count(*) FROM audit_auditevent WHERE kind = 'task.refused'"
    assert _rows(setup, refused) == [(0,)]
    ran = _rows(
        setup,
        "SELECT count(*) FROM django_q_task "
        "WHERE func = 'notify.tasks.deliver_notifications_task' AND success",
    )
    assert ran[0][0] >= 2
