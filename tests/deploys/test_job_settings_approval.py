"""Job settings are part of what is approved (deploys/job_settings.py): everything that
changes what the job may do on the host — killing other users' GPU processes, rollback,
every wait, the GPU-free threshold, the benchmark gate — is shown on the request page
beside the unit, diffed against what runs now, and pinned by the approval; a change after
the approval voids it."""

from __future__ import annotations

from collections.abc import Callable

from django.test import Client
from django.urls import reverse

from deploys.approvals import approval_problems
from deploys.job_settings import job_settings, settings_sha256
from deploys.models import DeployRequest, PushedUnit
from deploys.services.deploy_requests import deploy_request_approve
from perf.models import BenchPolicy
from tests.deploys.helpers import FakeHosts, People
from units.models import ServiceProfile
from units.services import profile_update

Status = DeployRequest.Status
KILL_FOREIGN = "Kill other users&#x27; processes on the service&#x27;s GPUs"


def runs_on_the_host(request: DeployRequest, on_host: FakeHosts) -> None:
    """The host runs `request`'s unit now (as the job's push step records it)."""
    DeployRequest.objects.filter(pk=request.pk).update(status=Status.SUCCEEDED)
    PushedUnit.objects.create(
        host=request.host,
        unit_name=request.unit_name,
        request=request,
        text=request.unit_text,
        sha256=request.unit_sha256,
    )
    on_host.files[request.unit_name] = request.unit_text.encode()


def test_killing_other_gpu_processes_shows_on_the_approval_page_and_in_the_diff(
    client: Client,
    people: People,
    profile: ServiceProfile,
    make_request: Callable[..., DeployRequest],
    on_host: FakeHosts,
) -> None:
    first = make_request()
    deploy_request_approve(request=first, approver=people.alice)
    runs_on_the_host(first, on_host)
    profile_update(profile=profile, data={"deploy_kill_foreign": True}, updated_by=people.olga)
    request = make_request(profile_version=profile.versions.get(number=2))
    assert request.unit_text == first.unit_text  # nothing of it is in the unit
    assert request.job_settings["pipeline"]["kill_foreign"] is True

    client.force_login(people.bob)
    page = client.get(reverse("deploys:request_detail", args=[request.pk])).content.decode()
    row = page[page.index(f"<td>{KILL_FOREIGN}</td>") :].split("</tr>", 1)[0]
    assert "<td>off</td>" in row and "<strong>on</strong>" in row and "changed" in row
    assert f"-{KILL_FOREIGN}: off" in page and f"+{KILL_FOREIGN}: on" in page
    assert f"job settings now (request #{first.pk})" in page
    assert "Approve this exact unit and these job settings" in page


def test_the_preview_before_requesting_shows_the_job_settings_too(
    client: Client, people: People, profile: ServiceProfile, host, on_host: FakeHosts
) -> None:  # type: ignore[no-untyped-def]
    profile_update(profile=profile, data={"deploy_kill_foreign": True}, updated_by=people.olga)
    client.force_login(people.olga)
    page = client.post(
        reverse("deploys:request_new"),
        {"profile_version": profile.versions.get(number=2).pk, "host": host.pk, "step": "preview"},
    ).content.decode()
    assert f"<td>{KILL_FOREIGN}</td>" in page and f"+{KILL_FOREIGN}: on" in page


def test_the_approval_pins_the_hash_of_the_job_settings(
    people: People, make_request: Callable[..., DeployRequest]
) -> None:
    request = deploy_request_approve(request=make_request(), approver=people.alice)
    assert request.approved_settings_sha256 == request.job_settings_sha256
    assert request.job_settings_sha256 == settings_sha256(request.job_settings)
    assert request.job_settings == job_settings(profile_version=request.profile_version)


def test_changing_kill_other_gpu_processes_after_the_approval_voids_the_request(
    people: People, profile: ServiceProfile, make_request: Callable[..., DeployRequest]
) -> None:
    request = deploy_request_approve(request=make_request(), approver=people.alice)
    assert approval_problems(request=request) == []
    profile_update(profile=profile, data={"deploy_kill_foreign": True}, updated_by=people.olga)
    assert approval_problems(request=request) != []


def test_changing_the_benchmark_gate_after_the_approval_voids_the_request(
    people: People, profile: ServiceProfile, make_request: Callable[..., DeployRequest]
) -> None:
    request = deploy_request_approve(request=make_request(), approver=people.alice)
    BenchPolicy.objects.create(profile=profile, rollback_on_regression=False)
    problems = approval_problems(request=request)
    assert any(
        "the job settings changed since the request (Roll back when the benchmark "
        "regresses: on → off)" in p
        for p in problems
    ), problems


def test_job_settings_edited_in_the_database_after_the_approval_void_it(
    people: People, make_request: Callable[..., DeployRequest]
) -> None:
    request = deploy_request_approve(request=make_request(), approver=people.alice)
    edited = dict(
        request.job_settings, pipeline=request.job_settings["pipeline"] | {"kill_foreign": True}
    )
    DeployRequest.objects.filter(pk=request.pk).update(job_settings=edited)
    request.refresh_from_db()
    assert "the stored job settings do not match their hash" in approval_problems(request=request)
