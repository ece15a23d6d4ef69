"""A cancel puts back what ran before (docs/architecture.md, "The restart pipeline"): the
approver approved "replace A with B, and back to A if B fails", so a cancel in any step
of a deploy runs the rollback path under that approval — restore A's unit, start it
again if it ran before, or stop and remove a brand-new B — with no second approval, and
the request's page says exactly what is true.

The real runner, preflight, push, daemon-reload and restore steps against an in-memory
unit directory (tests/doubles/unit_host.py); the service steps doubled. The cancel is
asked for while the named step runs, the way the job page asks: a step that waits returns
at once, any other runs to its end and the job sees the cancel at the next boundary.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from audit.models import AuditEvent, AuditKind
from deploys import selectors
from deploys.jobs import pipelines, runner
from deploys.jobs.steps import StepResult
from deploys.models import DeployRequest, Host, JobStep
from deploys.running import text_of
from deploys.services.deploy_requests import deploy_request_approve, deploy_request_create
from deploys.services.unit_requests import deploy_job_cancel
from tests.deploys.helpers import make_users, unique
from tests.deploys.what_runs_support import LocalSide, use_local_side
from units.models import ProfileVersion, ServiceProfile
from units.services import profile_create, profile_update

pytestmark = pytest.mark.django_db(transaction=True)

Status = DeployRequest.Status
DEPLOY = [s.name for s in pipelines.PIPELINES[DeployRequest.Kind.DEPLOY]]
EVERY_STEP = ["host_lock", *DEPLOY]
# Until the push, nothing on the host has changed: a cancel just stops the job.
BEFORE_CHANGES = ["host_lock", "preflight", "vllm_check"]


@dataclass
class World:
    """The in-memory host, its Host row, Olga who requests and Adam who approves."""

    side: LocalSide
    site: Host
    requester: Any
    approver: Any

    def request(self, data: dict[str, Any]) -> DeployRequest:
        profile = profile_create(data=data, created_by=None)
        return self.request_version(profile.versions.get())

    def request_version(self, version: ProfileVersion) -> DeployRequest:
        return deploy_request_create(
            profile_version=version,
            host=self.site,
            requested_by=self.requester,
            acknowledge_warnings=True,
        )

    def production(self, *, running: bool = True) -> ServiceProfile:
        """A deployed A (v1) on the host, running or stopped; its profile."""
        first = self.request(self.side.profile_data(unique("vllm-kimi")))
        assert self.side.run(first, self.approver) == Status.SUCCEEDED
        if not running:
            self.side.host.active.discard(f"{first.unit_name}.service")
        return first.profile_version.profile

    def next_version(self, profile: ServiceProfile, **changes: Any) -> DeployRequest:
        """B: the next version of A's profile, for the same unit."""
        version = profile_update(
            profile=profile, data={"max_num_seqs": 77, **changes}, updated_by=None
        )
        assert version is not None
        return self.request_version(version)

    def cancelled_run(self, request: DeployRequest, at: str) -> str:
        """Approve `request` and run its job; the approver cancels it while step `at` runs."""
        request = deploy_request_approve(request=request, approver=self.approver)
        if at == "host_lock":  # asked while the job waits for the host: seen by the wait
            DeployRequest.objects.filter(pk=request.pk).update(
                cancel_requested_at=timezone.now(), cancel_requested_by=self.approver
            )
        else:
            self.side.arm("cancel", at, lambda r: deploy_job_cancel(request=r, user=self.approver))
        side = self.side
        status = runner.run_deploy(request.pk, steps=side.steps(request.kind), connect=side.connect)
        side.arm("", "", None)
        return status


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> World:
    side = use_local_side(monkeypatch, LocalSide())
    return World(side, side.make_host(), *make_users())


def page_text(request: DeployRequest, user: Any) -> str:
    client = Client()
    client.force_login(user)
    return client.get(reverse("deploys:request_detail", args=[request.pk])).content.decode()


def final_event(request: DeployRequest) -> AuditEvent:
    return AuditEvent.objects.filter(
        object_id=str(request.pk), kind=AuditKind.DEPLOY_CANCELLED
    ).latest("id")


@pytest.mark.parametrize("at", EVERY_STEP)
def test_a_cancel_in_any_step_puts_the_running_previous_unit_back_and_waits_for_it(
    world: World, at: str
) -> None:
    side = world.side
    profile = world.production()
    unit = profile.name
    a_text = side.file(unit)
    b = world.next_version(profile)

    status = world.cancelled_run(b, at)

    b.refresh_from_db()
    assert status == b.status == Status.CANCELLED, b.status_reason
    assert side.file(unit) == a_text, "A's unit is on the host again"
    assert f"{unit}.service" in side.host.active, "A runs again"
    assert side.host.loaded[f"{unit}.service"] == a_text, "systemd loaded A's unit"
    rollback = JobStep.objects.filter(request=b, phase=JobStep.Phase.ROLLBACK)
    event = final_event(b)
    if at in BEFORE_CHANGES:
        assert b.status_reason.endswith(", before anything changed on the host"), b.status_reason
        assert not rollback.exists()
        assert event.payload["cancel"]["then"] == "before anything changed on the host"
    else:
        assert b.status_reason.endswith(", previous unit restored and ready"), b.status_reason
        assert set(rollback.values_list("status", flat=True)) == {JobStep.Status.SUCCEEDED}
        assert event.payload["cancel"]["then"] == "previous unit restored and ready"
    assert b.status_reason.startswith(f"cancelled by {world.approver} ")
    assert event.payload["cancel"]["by"] == str(world.approver)
    assert event.payload["on_host"]["sha256"] == profile.versions.get(number=1).unit_sha256
    if at == "host_lock":
        assert b.host_state == "unchanged: the job never connected to the host"
    else:
        assert "its file is the unit it had before this job" in b.host_state, b.host_state
    assert b.status_reason in page_text(b, world.requester)


@pytest.mark.parametrize("at", EVERY_STEP)
def test_a_cancel_of_a_brand_new_unit_stops_and_removes_it(world: World, at: str) -> None:
    side = world.side
    new = world.request(side.profile_data(unique("vllm-new")))
    unit = new.unit_name

    status = world.cancelled_run(new, at)

    new.refresh_from_db()
    assert status == new.status == Status.CANCELLED, new.status_reason
    assert side.file(unit) is None, "no unit file left behind"
    assert f"{unit}.service" not in side.host.loaded and not side.host.active
    if at in BEFORE_CHANGES:
        assert new.status_reason.endswith(", before anything changed on the host")
    else:
        assert new.status_reason.endswith(
            ", the new unit was stopped and removed (the host had none before)"
        ), new.status_reason
    if at != "host_lock":
        assert "not known to systemd; no unit file" in new.host_state, new.host_state


@pytest.mark.parametrize("at", ["push", "stop", "readiness"])
def test_a_cancel_puts_a_stopped_previous_unit_back_and_leaves_it_stopped(
    world: World, at: str
) -> None:
    side = world.side
    profile = world.production(running=False)
    a_text = side.file(profile.name)
    b = world.next_version(profile)

    assert world.cancelled_run(b, at) == Status.CANCELLED

    b.refresh_from_db()
    assert side.file(profile.name) == a_text and not side.host.active
    assert b.status_reason.endswith(
        ", previous unit restored (it did not run before the job: left stopped)"
    ), b.status_reason


def test_with_rollback_switched_off_a_cancel_puts_nothing_back_and_says_so(world: World) -> None:
    profile = world.production()
    b = world.next_version(profile, deploy_rollback=False)

    assert world.cancelled_run(b, "readiness") == Status.CANCELLED

    b.refresh_from_db()
    assert world.side.file(profile.name) == b.unit_text.encode()
    assert b.status_reason.endswith(
        "; rollback is switched off for this profile (as approved): nothing was put back"
    ), b.status_reason
    assert "its file is the requested unit" in b.host_state


# -- the confirmation step ---------------------------------------------------------------


def test_cancel_asks_first_and_says_exactly_what_will_happen(world: World) -> None:
    profile = world.production()
    b = world.next_version(profile)
    a_name, b_name = f"{profile.name} v1", f"{profile.name} v2"
    client = Client()
    client.force_login(world.approver)
    url = reverse("deploys:request_cancel", args=[b.pk])
    seen: dict[str, Any] = {}

    def during_readiness(request: DeployRequest) -> None:
        seen["job"] = client.get(reverse("deploys:request_job", args=[request.pk]))
        seen["confirm"] = client.get(url)
        seen["unconfirmed"] = client.post(url)  # no confirmation: asks again, does nothing
        seen["asked"] = DeployRequest.objects.get(pk=request.pk).cancel_requested_at
        seen["done"] = client.post(url, {"confirm": "yes"})

    request = deploy_request_approve(request=b, approver=world.approver)
    world.side.arm("cancel", "readiness", during_readiness)
    status = runner.run_deploy(
        request.pk, steps=world.side.steps(b.kind), connect=world.side.connect
    )

    job = seen["job"].content.decode()
    assert f'<a class="button danger" href="{url}">Cancel the job…</a>' in job
    assert f'action="{url}"' not in job, "the job part never cancels in one click"
    confirm = seen["confirm"].content.decode()
    assert seen["confirm"].status_code == 200
    assert (
        f"stop {b_name}, put {a_name}&#x27;s unit back, start {a_name} and wait for it" in confirm
    )
    assert f"<li>Stop {b_name}.</li>" in confirm
    assert f"<li>Start {a_name} again and wait until it is ready (up to 1 min).</li>" in confirm
    assert f"Cancel and put {a_name} back</button>" in confirm
    assert seen["unconfirmed"].status_code == 200 and "Cancel and put" in (
        seen["unconfirmed"].content.decode()
    )
    assert seen["asked"] is None, "neither showing nor an unconfirmed POST cancels"
    assert seen["done"].status_code == 302
    b.refresh_from_db()
    assert status == b.status == Status.CANCELLED
    assert b.status_reason.endswith(", previous unit restored and ready")


def test_the_confirmation_of_a_queued_or_brand_new_job_says_what_it_does(world: World) -> None:
    new = world.request(world.side.profile_data(unique("vllm-new")))
    new = deploy_request_approve(request=new, approver=world.approver)
    client = Client()
    client.force_login(world.approver)
    url = reverse("deploys:request_cancel", args=[new.pk])
    queued = client.get(url).content.decode()
    assert (
        f"the job has not started: it will not run, and nothing on {world.site.name} changes"
        in (queued)
    )
    DeployRequest.objects.filter(pk=new.pk).update(status=Status.RUNNING)
    running = client.get(url).content.decode()
    name = f"{new.unit_name} v1"
    assert f"stop {name} and remove its unit" in running
    assert (
        f"<li>Remove its unit file: {world.site.name} had no {new.unit_name}.service before "
        "this job.</li>"
    ) in running


def test_a_cancel_whose_way_back_fails_says_so_and_puts_up_the_banner(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A's unit goes back but A does not become ready: the request is rollback_failed
    (the banner on every page), and B's text is not marked as having failed there — a
    cancel says nothing about B."""

    def not_ready(ctx: Any, rec: Any, *needs: Any) -> StepResult:
        return StepResult.failed("not ready after 60 s")

    failing = tuple(
        dataclasses.replace(s, run=not_ready) if s.name == "readiness" else s
        for s in runner.ROLLBACK
    )
    monkeypatch.setattr(runner, "ROLLBACK", failing)
    profile = world.production()
    b = world.next_version(profile)

    assert world.cancelled_run(b, "readiness") == Status.ROLLBACK_FAILED

    b.refresh_from_db()
    assert b.status_reason == (
        f"cancelled by {world.approver} during readiness; the previous unit was restored "
        "but did not become ready: readiness: not ready after 60 s"
    )
    assert world.side.file(profile.name) == profile.versions.get(number=1).unit_text.encode()
    assert b in selectors.failed_rollbacks()
    event = AuditEvent.objects.filter(
        object_id=str(b.pk), kind=AuditKind.DEPLOY_ROLLBACK_FAILED
    ).get()
    assert event.payload["cancel"]["when"] == "during readiness"
    assert text_of(host=world.site, unit_name=profile.name, sha=b.unit_sha256).marks == ()
