"""Which events become notifications, for whom: a request waiting for approval (its
approvers, never its requester), a job's end (its requester), an incident (approvers,
admins and the host's webhooks); and that notify never slows, fails or loses a job."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest
from django.dispatch import Signal
from django.utils import timezone
from django_q.brokers import get_broker

from audit.models import AuditEvent, AuditKind
from deploys import signals
from deploys.jobs import runner
from deploys.jobs.flow import step
from deploys.jobs.steps import StepResult
from deploys.models import DeployRequest, Host
from deploys.services.deploy_requests import deploy_request_approve
from hostops.channel import TransportError
from notify import delivery, incidents, services
from notify.events import Event
from notify.models import EmailSetting, HostMute, Notification, Webhook
from notify.queue import DELIVER_TASK
from tests.deploys.helpers import People
from tests.doubles.smtp_sink import SmtpSink
from tests.doubles.webhook_receiver import WebhookReceiver

pytestmark = pytest.mark.django_db
Status = DeployRequest.Status


def _to(event: str) -> list[tuple[str, str]]:
    return sorted(
        Notification.objects.filter(event=event).values_list("channel", "address").distinct()
    )


def approved_what(request: DeployRequest) -> str:
    return f"deploy of {request.profile_version.profile.name} v1 ({request.unit_name}) on gpu-a"


def _no_host(host: Host) -> Any:
    raise TransportError(f"{host.name}: no connection in this test")


def _run(request: DeployRequest, outcome: StepResult) -> str:
    """Run `request`'s job with one step that ends as `outcome` (no host is touched)."""
    only = step("preflight", lambda ctx, rec: outcome)
    return runner.run_deploy(request.pk, steps=(only,), connect=_no_host)


@pytest.fixture
def approved(mailed: People, make_request: Any, enqueued: Any) -> DeployRequest:
    request = make_request()
    return deploy_request_approve(request=request, approver=mailed.alice)


def test_a_new_request_tells_every_approver_but_never_its_requester(
    mailed: People, make_request: Any, host: Host
) -> None:
    mailed.ada.groups.add(*mailed.alice.groups.all())  # an admin who also approves
    request = make_request(requested_by=mailed.ada)
    assert _to(Event.APPROVAL_WAITING) == [
        ("email", "alice@example.org"),
        ("email", "bob@example.org"),
    ]
    row = Notification.objects.filter(event=Event.APPROVAL_WAITING).first()
    assert row is not None and row.host == host
    assert f"request #{request.pk}" in row.subject and "gpu-a" in row.subject
    assert row.payload["url"] == f"/deploys/requests/{request.pk}/"
    assert row.payload["requested_by"] == "ada"


def test_an_operators_request_tells_the_approvers_and_admins(
    mailed: People, make_request: Any
) -> None:
    make_request()  # olga's
    assert [a for _, a in _to(Event.APPROVAL_WAITING)] == [
        "ada@example.org",
        "alice@example.org",
        "bob@example.org",
    ]


def test_email_switched_off_and_muted_hosts_are_respected(
    mailed: People, make_request: Any, host: Host
) -> None:
    services.set_email_events(user=mailed.alice, events=[Event.JOB_FAILED])
    HostMute.objects.create(user=mailed.bob, host=host)
    Webhook.objects.create(
        owner=mailed.bob, url="http://127.0.0.1:9/bob", events=[Event.APPROVAL_WAITING]
    )
    make_request()
    assert _to(Event.APPROVAL_WAITING) == [("email", "ada@example.org")]
    assert EmailSetting.objects.filter(user=mailed.alice, enabled=True).count() == 1


def test_a_hosts_webhook_hears_that_hosts_events_whoever_they_are_for(
    mailed: People, make_request: Any, host: Host
) -> None:
    Webhook.objects.create(
        owner=mailed.vic,
        url="https://chat.example.org/team",
        slack=True,
        host=host,
        events=[Event.APPROVAL_WAITING],
    )
    other = Host.objects.create(name="gpu-b", address="10.0.0.8")
    Webhook.objects.create(
        owner=mailed.vic, url="https://chat.example.org/b", host=other, events=list(Event.values)
    )
    make_request()
    assert ("slack", "https://chat.example.org/team") in _to(Event.APPROVAL_WAITING)
    assert ("webhook", "https://chat.example.org/b") not in _to(Event.APPROVAL_WAITING)


@pytest.mark.parametrize(
    ("outcome", "status", "event"),
    [
        (StepResult.success(), Status.SUCCEEDED, Event.JOB_SUCCEEDED),
        (StepResult.failed("vLLM did not start"), Status.FAILED, Event.JOB_FAILED),
    ],
)
def test_a_job_that_ends_tells_its_requester_how(
    approved: DeployRequest, mailed: People, outcome: StepResult, status: str, event: str
) -> None:
    assert _run(approved, outcome) == status
    (row,) = Notification.objects.filter(event__startswith="job_")
    assert (row.event, row.address) == (event, "olga@example.org")
    assert f"Request #{approved.pk} {status.replace('_', ' ')}" in row.subject
    assert row.payload["status"] == status
    if status == Status.FAILED:
        assert "vLLM did not start" in row.text


def test_a_rolled_back_job_is_its_own_event(approved: DeployRequest, mailed: People) -> None:
    signals.send(
        signals.job_ended,
        DeployRequest,
        request=approved,
        status=Status.ROLLED_BACK,
        reason="readiness failed; rolled back: the unit it had before",
    )
    (row,) = Notification.objects.filter(event=Event.JOB_ROLLED_BACK)
    assert row.address == "olga@example.org" and "rolled back" in row.subject


def test_a_job_finishing_while_the_webhook_is_down_ends_and_is_told_later(
    approved: DeployRequest, mailed: People, receiver: WebhookReceiver, sink: SmtpSink
) -> None:
    receiver.status = 500
    Webhook.objects.create(owner=mailed.olga, url=receiver.url(), events=list(Event.values))
    started = time.monotonic()
    assert _run(approved, StepResult.success()) == Status.SUCCEEDED
    took = time.monotonic() - started
    assert receiver.posts == [] and sink.messages == []  # nothing sent by the job
    delivery.deliver_due()
    to_olga = [
        str(m.message["Subject"]).replace("\r\n", "")
        for m in sink.messages
        if m.recipients == ["olga@example.org"]
    ]
    assert to_olga == [f"[specadmin] Request #{approved.pk} succeeded: {approved_what(approved)}"]
    # … the e-mail went; the webhook failed
    hook = Notification.objects.get(channel="webhook")
    assert hook.state == Notification.State.PENDING and hook.last_error.startswith("HTTP 500")
    receiver.status = 200
    hook.refresh_from_db()
    time.sleep(max((hook.next_attempt_at - hook.created_at).total_seconds(), 0.3))
    delivery.deliver_due()
    hook.refresh_from_db()
    assert hook.state == Notification.State.DELIVERED
    assert [p.body["event"] for p in receiver.posts] == ["job_succeeded", "job_succeeded"]
    assert took < 10


def test_a_failure_in_notify_never_fails_the_job_or_the_request(
    approved: DeployRequest, mailed: People, make_request: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(**kwargs: Any) -> None:
        Notification.objects.create(
            event="job_succeeded", subject="half", next_attempt_at=timezone.now()
        )
        raise RuntimeError("notify is broken")

    monkeypatch.setattr(services, "enqueue", broken)
    assert _run(approved, StepResult.success()) == Status.SUCCEEDED
    approved.refresh_from_db()
    assert approved.status == Status.SUCCEEDED and approved.finished_at is not None
    assert make_request().status == Status.PENDING
    assert not Notification.objects.filter(subject="half").exists()  # its savepoint undone


def test_delivery_is_kicked_after_commit_and_the_worker_may_run_it(
    mailed: People, make_request: Any, django_capture_on_commit_callbacks: Any
) -> None:
    broker = get_broker()  # the allow-listed one (ORM, or Redis with REDIS_URL)
    before = broker.queue_size()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        make_request()
    assert broker.queue_size() == before  # nothing queued before the commit
    for callback in callbacks:
        callback()
    assert broker.queue_size() >= before + 1
    assert not AuditEvent.objects.filter(kind=AuditKind.TASK_REFUSED).exists()
    assert DELIVER_TASK == "notify.tasks.deliver_notifications_task"


def test_incident_signals_wired_in_one_line_tell_approvers_and_the_hosts_webhooks(
    mailed: People, host: Host
) -> None:
    opened, closed = Signal(), Signal()
    incidents.connect(opened, closed)
    Webhook.objects.create(
        owner=mailed.vic, url="https://chat.example.org/gpu-a", host=host, events=list(Event.values)
    )
    incident = SimpleNamespace(
        pk=3,
        host=host,
        kind="gpu_leftover",
        summary="PID 4242 (alice) holds 20,480 MiB on GPU 0 while the service is stopped",
        evidence={"pid": 4242},
    )
    opened.send(sender=SimpleNamespace, incident=incident)
    closed.send(sender=SimpleNamespace, incident=incident)
    for event in (Event.INCIDENT_OPENED, Event.INCIDENT_CLOSED):
        assert _to(event) == [
            ("email", "ada@example.org"),
            ("email", "alice@example.org"),
            ("email", "bob@example.org"),
            ("webhook", "https://chat.example.org/gpu-a"),
        ]
    row = Notification.objects.filter(event=Event.INCIDENT_OPENED).first()
    assert row is not None
    assert row.subject == "Incident opened on gpu-a: gpu_leftover"
    assert row.payload["evidence"] == {"pid": 4242} and row.payload["incident"] == 3
