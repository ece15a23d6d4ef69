"""Delivery from the outbox against real receivers: an SMTP server and an HTTP webhook
receiver on loopback ports, answering, failing, hanging or gone."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from notify import delivery
from notify.events import Event
from notify.models import Channel, DeliveryAttempt, Notification, Webhook
from notify.services import enqueue
from tests.deploys.helpers import People
from tests.doubles.smtp_sink import SmtpSink
from tests.doubles.webhook_receiver import WebhookReceiver
from tests.ports import refusing_port

pytestmark = pytest.mark.django_db
State = Notification.State


def _hook(owner: Any, url: str, *, slack: bool = False) -> Webhook:
    return Webhook.objects.create(owner=owner, url=url, slack=slack, events=list(Event.values))


def _queue(users: list[Any], **kwargs: Any) -> list[Notification]:
    return enqueue(
        event=kwargs.pop("event", Event.JOB_SUCCEEDED),
        subject=kwargs.pop("subject", "Request #7 succeeded"),
        text=kwargs.pop("text", "deployed: the new unit is running and ready"),
        payload=kwargs.pop("payload", {"request": 7, "url": "/deploys/requests/7/"}),
        users=users,
        **kwargs,
    )


def _tries(notification: Notification) -> list[tuple[int, str, str]]:
    return list(
        DeliveryAttempt.objects.filter(notification=notification).values_list(
            "number", "status", "error"
        )
    )


def _wait_until_due(notification: Notification) -> None:
    notification.refresh_from_db()
    time.sleep(max((notification.next_attempt_at - timezone.now()).total_seconds(), 0) + 0.02)


def test_an_email_goes_through_djangos_smtp_backend_to_the_server(
    mailed: People, sink: SmtpSink, settings: Any
) -> None:
    settings.NOTIFY_SITE_URL = "https://specadmin.example.org/"
    (row,) = _queue([mailed.olga])
    assert row.channel == Channel.EMAIL and row.address == "olga@example.org"
    assert sink.messages == []  # queued, not sent by the caller
    assert delivery.deliver_due() == 1
    (got,) = sink.messages
    assert got.recipients == ["olga@example.org"]
    assert got.message["Subject"] == "[specadmin] Request #7 succeeded"
    body = got.message.get_payload()
    assert "deployed: the new unit is running and ready" in body
    assert "https://specadmin.example.org/deploys/requests/7/" in body
    row.refresh_from_db()
    assert (row.state, row.attempts, row.last_error) == (State.DELIVERED, 1, "")
    assert row.delivered_at is not None
    assert _tries(row) == [(1, "delivered", "")]


def test_a_mail_server_that_refuses_is_a_recorded_try_and_a_later_one(
    mailed: People, sink: SmtpSink
) -> None:
    sink.answer = "451 4.3.0 try again later"
    (row,) = _queue([mailed.olga])
    assert delivery.deliver_due() == 0
    row.refresh_from_db()
    assert row.state == State.PENDING and "451" in row.last_error
    sink.answer = ""
    _wait_until_due(row)
    assert delivery.deliver_due() == 1
    assert [t[1] for t in _tries(row)] == ["failed", "delivered"]
    assert len(sink.messages) == 1


def test_a_webhook_receives_specadmins_json(
    people: People, receiver: WebhookReceiver, host: Any
) -> None:
    _hook(people.olga, receiver.url())
    (row,) = _queue([people.olga], host=host)
    assert delivery.deliver_due() == 1
    (post,) = receiver.posts
    assert post.headers["Content-Type"] == "application/json"
    assert post.body == {
        "id": row.pk,
        "event": "job_succeeded",
        "subject": "Request #7 succeeded",
        "text": "deployed: the new unit is running and ready",
        "host": "gpu-a",
        "created_at": post.body["created_at"],
        "url": "/deploys/requests/7/",
        "payload": {"request": 7, "url": "/deploys/requests/7/"},
    }


def test_a_slack_compatible_webhook_receives_only_text(
    people: People, receiver: WebhookReceiver
) -> None:
    _hook(people.olga, receiver.url("/services/T0/B0/x"), slack=True)
    _queue([people.olga])
    assert delivery.deliver_due() == 1
    (post,) = receiver.posts
    assert post.path == "/services/T0/B0/x"
    assert post.body == {
        "text": "Request #7 succeeded\ndeployed: the new unit is running and ready\n"
        "/deploys/requests/7/"
    }


def test_a_failing_webhook_is_tried_again_after_doubling_waits_then_delivered(
    people: People, receiver: WebhookReceiver
) -> None:
    receiver.status = 500
    _hook(people.olga, receiver.url())
    (row,) = _queue([people.olga])
    for expected_wait in (0.2, 0.4, 0.8):
        before = timezone.now()
        assert delivery.deliver_due() == 0
        row.refresh_from_db()
        assert row.state == State.PENDING and row.last_error.startswith("HTTP 500")
        wait = (row.next_attempt_at - before).total_seconds()
        assert expected_wait <= wait < expected_wait + 0.5
        assert delivery.deliver_due() == 0  # not due yet: nothing is sent
        if expected_wait < 0.8:
            _wait_until_due(row)
    receiver.status = 200
    row.refresh_from_db()
    assert row.attempts == 3
    _wait_until_due(row)
    assert delivery.deliver_due() == 1
    assert [t[1] for t in _tries(row)] == ["failed", "failed", "failed", "delivered"]
    gaps = [b.at - a.at for a, b in zip(receiver.posts, receiver.posts[1:], strict=False)]
    assert len(receiver.posts) == 4
    assert [round(g, 1) >= w for g, w in zip(gaps, (0.2, 0.4, 0.8), strict=True)] == [True] * 3


def test_a_webhook_that_never_answers_times_out_and_is_tried_later(
    people: People, receiver: WebhookReceiver, settings: Any
) -> None:
    settings.NOTIFY_TIMEOUT_S = 0.5
    receiver.hang.set()
    _hook(people.olga, receiver.url())
    (row,) = _queue([people.olga])
    started = time.monotonic()
    assert delivery.deliver_due() == 0
    assert time.monotonic() - started < 3
    row.refresh_from_db()
    assert (row.state, row.last_error) == (State.PENDING, "no answer within 0.5 s")
    (attempt,) = DeliveryAttempt.objects.filter(notification=row)
    assert 450 <= attempt.duration_ms < 3000


def test_after_its_last_try_a_notification_is_dead_and_says_why(
    people: People, settings: Any
) -> None:
    settings.NOTIFY_MAX_ATTEMPTS = 2
    settings.NOTIFY_BACKOFF_S = 0.05
    with refusing_port() as port:
        _hook(people.olga, f"http://127.0.0.1:{port}/hook")
        (row,) = _queue([people.olga])
        assert delivery.deliver_due() == 0
        _wait_until_due(row)
        assert delivery.deliver_due() == 0
    row.refresh_from_db()
    assert (row.state, row.attempts) == (State.DEAD, 2)
    assert row.last_error.startswith("could not reach it: ")
    assert "refused" in row.last_error.lower()
    assert delivery.claim(timezone.now() + timedelta(days=1)) is None  # never tried again


def test_a_redirect_is_not_followed(people: People, receiver: WebhookReceiver) -> None:
    receiver.status = 307
    _hook(people.olga, receiver.url())
    (row,) = _queue([people.olga])
    delivery.deliver_due()
    row.refresh_from_db()
    assert row.state == State.PENDING and row.last_error.startswith("HTTP 307")
    assert len(receiver.posts) == 1


def test_a_claim_whose_worker_died_expires_and_the_next_run_sends_it(
    people: People, receiver: WebhookReceiver
) -> None:
    _hook(people.olga, receiver.url())
    (row,) = _queue([people.olga])
    claimed = delivery.claim()
    assert claimed is not None and claimed.pk == row.pk  # … and the worker dies here
    assert delivery.claim() is None  # held: no second sender
    later = timezone.now() + timedelta(seconds=delivery.claim_seconds() + 1)
    again = delivery.claim(later)
    assert again is not None and (again.pk, again.attempts) == (row.pk, 2)
    assert delivery.attempt(again)
    assert _tries(row) == [(2, "delivered", "")]


@pytest.mark.django_db(transaction=True)
def test_two_workers_send_each_notification_exactly_once(
    people: People, receiver: WebhookReceiver
) -> None:
    receiver.delay = 0.01  # each send takes a moment, so the two workers overlap
    _hook(people.olga, receiver.url())
    rows = [_queue([people.olga], subject=f"message {n}")[0] for n in range(30)]
    counts: list[int] = []
    start = threading.Barrier(2)

    def worker() -> None:
        try:
            start.wait()
            counts.append(delivery.deliver_due())
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    ids = sorted(post.body["id"] for post in receiver.posts)
    assert ids == sorted(row.pk for row in rows)  # each one, once
    assert sum(counts) == 30 and all(counts)  # both worked
    assert set(Notification.objects.values_list("state", flat=True)) == {State.DELIVERED}
    assert DeliveryAttempt.objects.count() == 30


def test_a_mail_server_that_never_greets_times_out_and_is_tried_later(
    mailed: People, sink: SmtpSink, settings: Any
) -> None:
    settings.NOTIFY_TIMEOUT_S = 0.5
    sink.hang.set()
    (row,) = _queue([mailed.olga])
    started = time.monotonic()
    assert delivery.deliver_due() == 0
    assert time.monotonic() - started < 3
    row.refresh_from_db()
    assert (row.state, row.last_error) == (
        State.PENDING,
        "the mail server did not answer within 0.5 s",
    )


def test_what_is_stored_is_bounded(people: People, receiver: WebhookReceiver) -> None:
    _hook(people.olga, receiver.url())
    (row,) = _queue(
        [people.olga],
        subject="deploy\n" + "s" * 500,
        text="t" * 10_000,
        payload={"log": "x" * 10_000, "lines": ["y" * 1000] * 40},
    )
    assert len(row.subject) == 200 and row.subject.startswith("deploy sss")
    assert row.subject.endswith("…")
    assert len(row.text) <= 4000 and "characters not kept" in row.text
    assert row.payload["clipped"].startswith("the payload was ")
    assert row.payload["keys"] == ["lines", "log"]
    small = _queue([people.olga], payload={"log": "x" * 10_000})[0].payload["log"]
    assert len(small) <= 2000 and small.startswith("x") and small.endswith("x")
    assert delivery.deliver_due() == 2
