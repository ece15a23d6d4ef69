"""Requests a dead worker left `running` are failed by the housekeeping schedule; live
jobs (renewing their lease) and jobs still waiting for the host are left alone."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from audit.models import AuditEvent
from deploys.jobs import runner
from deploys.jobs.context import JobContext
from deploys.jobs.flow import step
from deploys.jobs.lease import lease_seconds, wait_seconds
from deploys.jobs.recorder import Recorder
from deploys.jobs.runner import fail_abandoned_deploys
from deploys.jobs.steps import StepResult
from deploys.locks import HostLock
from deploys.models import DeployRequest, Host
from tests.units.factories import baseline
from units.services import profile_create

pytestmark = pytest.mark.django_db


def running_request(*, started_ago: float, host: Host) -> DeployRequest:
    user = get_user_model().objects.get_or_create(username="olga")[0]
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
