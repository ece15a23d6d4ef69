"""Requests a dead worker left `running` are failed by the housekeeping schedule; live
jobs (renewing their lease) and jobs still waiting for the host are left alone."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django_q.models import Schedule

from audit.models import AuditEvent
from deploys.jobs import runner
from deploys.jobs.context import JobContext
from deploys.jobs.flow import step
from deploys.jobs.lease import LOCK_STEP, lease_seconds, wait_seconds
from deploys.jobs.recorder import Recorder
from deploys.jobs.runner import fail_abandoned_deploys
from deploys.jobs.steps import StepResult
from deploys.locks import HostLock
from deploys.models import DeployRequest, Host, JobStep
from tests.units.factories import baseline
from units.services import profile_create

pytestmark = pytest.mark.django_db


def running_request(*, started_ago: float, host: Host) -> DeployRequest:
    user = get_user_model().objects.get_or_create(username="olga", is_superuser=True)[0]
    profile = profile_create(
        data=baseline(name=f"p{DeployRequest.objects.count()}"), created_by=user
    )
    now = timezone.now()
    return DeployRequest.objects.create(
        profile_version=profile.versions.get(),
        host=host,
        unit_name=profile.name,
        unit_text="x",
        unit_sha256="0" * 64,
        status=DeployRequest.Status.RUNNING,
        requested_by=user,
        expires_at=now + timedelta(hours=1),
        started_at=now - timedelta(seconds=started_ago),
    )


@pytest.fixture
def host() -> Host:
    return Host.objects.create(name="gpu-a", address="127.0.0.1", host_key="ssh-ed25519 AAAA")


def test_dead_worker_request_is_interrupted_and_audited(host: Host) -> None:
    old = wait_seconds() + lease_seconds() + 60
    request = running_request(started_ago=old, host=host)
    DeployRequest.objects.filter(pk=request.pk).update(last_step="push")
    assert fail_abandoned_deploys() == 1
    request.refresh_from_db()
    assert request.status == DeployRequest.Status.INTERRUPTED
    assert "worker running this job stopped" in request.status_reason
    assert "last completed step: push" in request.status_reason
    assert "nothing is re-run automatically" in request.status_reason
    event = AuditEvent.objects.get(kind="deploy.interrupted", object_id=str(request.pk))
    assert event.payload["last_step"] == "push"
    assert fail_abandoned_deploys() == 0  # once


def test_live_lease_keeps_a_long_job_running(host: Host) -> None:
    old = wait_seconds() + lease_seconds() + 60
    request = running_request(started_ago=old, host=host)
    HostLock.objects.create(
        host=host,
        owner="w:1:x",
        request=request,
        expires_at=timezone.now() + timedelta(seconds=60),
    )
    assert fail_abandoned_deploys() == 0
    request.refresh_from_db()
    assert request.status == DeployRequest.Status.RUNNING


def test_job_still_waiting_for_the_host_is_left_alone(host: Host) -> None:
    request = running_request(started_ago=wait_seconds() / 2, host=host)
    assert fail_abandoned_deploys() == 0
    request.refresh_from_db()
    assert request.status == DeployRequest.Status.RUNNING


@pytest.mark.django_db(transaction=True)
def test_a_job_interrupted_as_abandoned_keeps_that_status_when_its_worker_finishes(
    host: Host,
) -> None:
    """A stalled worker whose job the sweeper already marked interrupted must not end it
    again: the request stays interrupted and the history gets no contradicting event."""
    request = running_request(started_ago=0, host=host)
    DeployRequest.objects.filter(pk=request.pk).update(status=DeployRequest.Status.APPROVED)

    def stalled_then_swept(ctx: JobContext, rec: Recorder) -> StepResult:
        later = timezone.now() + timedelta(seconds=wait_seconds() + lease_seconds() + 60)
        HostLock.objects.filter(host=host).update(expires_at=timezone.now())
        assert fail_abandoned_deploys(now=later) == 1
        return StepResult.success()

    status = runner.run_deploy(request.pk, steps=(step("stall", stalled_then_swept),))

    request.refresh_from_db()
    assert status == request.status == DeployRequest.Status.INTERRUPTED
    assert "worker running this job stopped" in request.status_reason
    finals = AuditEvent.objects.filter(
        object_id=str(request.pk),
        kind__in=["deploy.succeeded", "deploy.failed", "deploy.interrupted"],
    )
    assert list(finals.values_list("kind", flat=True)) == ["deploy.interrupted"]


# -- seen when the lease expires ------------------------------------------------------------


def held_the_host(request: DeployRequest, *, expires_in: float) -> None:
    """`request`'s job took the host's lease (its host_lock step succeeded); the lease
    expires `expires_in` seconds from now (negative: it has expired)."""
    now = timezone.now()
    JobStep.objects.create(
        request=request,
        name=LOCK_STEP,
        status=JobStep.Status.SUCCEEDED,
        started_at=now,
        finished_at=now,
    )
    HostLock.objects.update_or_create(
        host=request.host,
        defaults={
            "owner": "gpu-worker-1:4242:abc",
            "purpose": f"deploy #{request.pk}",
            "request": request,
            "renewed_at": now,
            "expires_at": now + timedelta(seconds=expires_in),
        },
    )


def job_page(request: DeployRequest) -> str:
    client = Client()
    client.force_login(get_user_model().objects.get(username="olga"))
    return client.get(reverse("deploys:request_job", args=[request.pk])).content.decode()


def test_a_job_that_held_the_host_is_interrupted_as_soon_as_its_lease_expired(host: Host) -> None:
    request = running_request(started_ago=5, host=host)
    held_the_host(request, expires_in=-1)
    assert fail_abandoned_deploys() == 1
    request.refresh_from_db()
    assert request.status == DeployRequest.Status.INTERRUPTED


def test_a_job_whose_lease_is_still_renewed_is_left_alone(host: Host) -> None:
    request = running_request(started_ago=5, host=host)
    held_the_host(request, expires_in=30)
    assert fail_abandoned_deploys() == 0
    page = job_page(request)
    assert '<span class="tag status-running" id="status">Running</span>' in page
    assert "worker lost" not in page.lower()


def test_the_job_page_says_worker_lost_once_the_lease_has_expired(host: Host) -> None:
    request = running_request(started_ago=5, host=host)
    held_the_host(request, expires_in=-3)
    page = job_page(request)
    assert '<span class="tag status-lost" id="status">Worker lost</span>' in page, page
    assert f"its lease on {host.name} expired" in page
    assert "marks the job interrupted at its next run" in page
    assert "hx-get" in page, "the page keeps asking until the job is marked interrupted"


def test_a_job_still_waiting_in_line_for_the_host_is_not_lost(host: Host) -> None:
    request = running_request(started_ago=5, host=host)
    JobStep.objects.create(
        request=request, name=LOCK_STEP, status=JobStep.Status.RUNNING, started_at=timezone.now()
    )
    assert "worker lost" not in job_page(request).lower()
    assert fail_abandoned_deploys() == 0


@pytest.mark.django_db(transaction=True)
def test_the_next_job_that_takes_the_expired_lease_over_marks_the_dead_one_interrupted(
    host: Host,
) -> None:
    dead = running_request(started_ago=5, host=host)
    held_the_host(dead, expires_in=-1)
    following = running_request(started_ago=0, host=host)
    DeployRequest.objects.filter(pk=following.pk).update(status=DeployRequest.Status.APPROVED)

    def nothing(ctx: JobContext, rec: Recorder) -> StepResult:
        return StepResult.success()

    assert runner.run_deploy(following.pk, steps=(step("noop", nothing),)) == "succeeded"
    dead.refresh_from_db()
    assert dead.status == DeployRequest.Status.INTERRUPTED
    assert "the next job for the host took its expired lease over" in dead.status_reason


def test_the_housekeeping_that_finds_dead_workers_runs_every_minute() -> None:
    """Its period is how long a request still says `running` after its lease expired
    (the page says "worker lost" at once)."""
    schedule = Schedule.objects.get(func="deploys.jobs.tasks.fail_abandoned_deploys_task")
    assert (schedule.schedule_type, schedule.minutes) == (Schedule.MINUTES, 1)
    assert lease_seconds() <= 60
