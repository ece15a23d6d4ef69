"""Four eyes: the approver is neither the requester nor an author of
any change the deploy brings to the host (a profile version saved since the one the host
runs). Ada is an admin: she may edit profiles and approve, but never her own changes.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.core.exceptions import PermissionDenied
from django.test import Client
from django.urls import reverse

from deploys.approvals import approval_problems, change_authors
from deploys.models import DeployRequest, Host, PushedUnit
from deploys.services.deploy_requests import deploy_request_approve, deploy_request_reject
from tests.deploys.helpers import FakeHosts, People
from units.models import ServiceProfile
from units.services import profile_clone, profile_restore_version, profile_update

Status = DeployRequest.Status


def edit(profile: ServiceProfile, by: object, **changes: object) -> None:
    profile_update(profile=profile, data=changes, updated_by=by)


def pushed(request: DeployRequest) -> PushedUnit:
    """The host runs `request`'s version now (as the job's push step records it)."""
    DeployRequest.objects.filter(pk=request.pk).update(status=Status.SUCCEEDED)
    return PushedUnit.objects.create(
        host=request.host,
        unit_name=request.unit_name,
        request=request,
        text=request.unit_text,
        sha256=request.unit_sha256,
    )


def test_author_of_the_requested_version_cannot_approve_it(
    people: People, profile: ServiceProfile, make_request: Callable[..., DeployRequest]
) -> None:
    edit(profile, people.ada, max_num_seqs=32)  # ada writes v2 …
    request = make_request(profile_version=profile.versions.get(number=2))  # … olga asks
    with pytest.raises(PermissionDenied, match="You wrote v2 of vllm-kimi-k25-int4"):
        deploy_request_approve(request=request, approver=people.ada)
    request.refresh_from_db()
    assert request.status == Status.PENDING
    assert deploy_request_approve(request=request, approver=people.bob).status == Status.APPROVED


def test_author_of_an_earlier_change_since_the_running_version_cannot_approve(
    people: People,
    profile: ServiceProfile,
    make_request: Callable[..., DeployRequest],
    on_host: FakeHosts,
) -> None:
    first = make_request()
    deploy_request_approve(request=first, approver=people.alice)
    on_host.files["vllm-kimi-k25-int4"] = pushed(first).text.encode()  # the host runs v1
    edit(profile, people.ada, max_num_seqs=32)  # v2 by ada, never deployed
    edit(profile, people.olga, max_num_seqs=16)  # v3 by olga
    request = make_request(profile_version=profile.versions.get(number=3))
    assert change_authors(request) == {people.ada.pk: [2], people.olga.pk: [3]}
    with pytest.raises(PermissionDenied, match="You wrote v2"):
        deploy_request_approve(request=request, approver=people.ada)
    with pytest.raises(PermissionDenied):
        deploy_request_reject(request=request, approver=people.ada, comment="mine anyway")


def test_author_of_the_version_already_running_may_approve_the_next_change(
    people: People,
    profile: ServiceProfile,
    make_request: Callable[..., DeployRequest],
    on_host: FakeHosts,
) -> None:
    edit(profile, people.ada, max_num_seqs=32)  # v2 by ada …
    first = make_request(profile_version=profile.versions.get(number=2))
    deploy_request_approve(request=first, approver=people.bob)
    on_host.files["vllm-kimi-k25-int4"] = pushed(first).text.encode()  # … runs on the host
    edit(profile, people.olga, max_num_seqs=16)  # v3 by olga
    request = make_request(profile_version=profile.versions.get(number=3))
    assert deploy_request_approve(request=request, approver=people.ada).status == "approved"


def test_a_host_that_never_ran_the_profile_counts_every_version(
    people: People, profile: ServiceProfile, make_request: Callable[..., DeployRequest]
) -> None:
    edit(profile, people.ada, max_num_seqs=32)
    edit(profile, people.olga, max_num_seqs=16)
    request = make_request(profile_version=profile.versions.get(number=3))
    assert set(change_authors(request)) == {people.olga.pk, people.ada.pk}


def test_approval_written_around_the_rule_is_void_at_run_time(
    people: People, profile: ServiceProfile, make_request: Callable[..., DeployRequest]
) -> None:
    edit(profile, people.ada, max_num_seqs=32)
    request = make_request(profile_version=profile.versions.get(number=2))
    # As an older release, or someone with database access, would have stored it:
    DeployRequest.objects.filter(pk=request.pk).update(
        status=Status.APPROVED, decided_by=people.ada, approved_sha256=request.unit_sha256
    )
    request.refresh_from_db()
    problems = approval_problems(request=request)
    assert any("approved by ada, who may not: You wrote v2" in p for p in problems)


def test_request_page_tells_an_author_why_she_cannot_decide(
    client: Client,
    people: People,
    profile: ServiceProfile,
    host: Host,
    make_request: Callable[..., DeployRequest],
) -> None:
    edit(profile, people.ada, max_num_seqs=32)
    request = make_request(profile_version=profile.versions.get(number=2))
    client.force_login(people.ada)
    page = client.get(reverse("deploys:request_detail", args=[request.pk])).content.decode()
    assert "Approve this exact unit" not in page
    assert "You wrote v2 of vllm-kimi-k25-int4" in page
    client.force_login(people.bob)
    page = client.get(reverse("deploys:request_detail", args=[request.pk])).content.decode()
    assert "Approve this exact unit" in page


# -- authorship follows content: clones and restores carry the authors of what they copy --


def test_the_author_of_a_cloned_version_cannot_approve_the_clone(
    people: People, profile: ServiceProfile, make_request: Callable[..., DeployRequest]
) -> None:
    edit(profile, people.ada, max_num_seqs=32)  # ada writes v2 …
    clone = profile_clone(profile=profile, new_name="vllm-kimi-variant", created_by=people.olga)
    request = make_request(profile_version=clone.versions.get(number=1))  # … olga clones it
    assert change_authors(request) == {people.olga.pk: [1], people.ada.pk: [1]}
    with pytest.raises(
        PermissionDenied,
        match=r"You wrote part of v1 \(copied from vllm-kimi-k25-int4 v2\) of vllm-kimi-variant",
    ):
        deploy_request_approve(request=request, approver=people.ada)
    assert deploy_request_approve(request=request, approver=people.bob).status == Status.APPROVED


def test_the_author_of_a_restored_version_cannot_approve_the_restore(
    people: People,
    profile: ServiceProfile,
    make_request: Callable[..., DeployRequest],
    on_host: FakeHosts,
) -> None:
    edit(profile, people.ada, max_num_seqs=32)  # v2 by ada
    edit(profile, people.olga, max_num_seqs=16)  # v3 by olga …
    running = make_request(profile_version=profile.versions.get(number=3))
    deploy_request_approve(request=running, approver=people.alice)
    on_host.files["vllm-kimi-k25-int4"] = pushed(running).text.encode()  # … runs on the host
    restored = profile_restore_version(
        version=profile.versions.get(number=2), restored_by=people.olga
    )  # v4: ada's v2 again, "written" by olga
    request = make_request(profile_version=restored)
    assert change_authors(request) == {people.olga.pk: [4], people.ada.pk: [4]}
    with pytest.raises(PermissionDenied, match=r"You wrote part of v4 \(copied from v2\)"):
        deploy_request_approve(request=request, approver=people.ada)
    assert deploy_request_approve(request=request, approver=people.bob).status == Status.APPROVED


def test_a_restore_carries_the_authors_of_the_copied_version_only(
    people: People, profile: ServiceProfile
) -> None:
    edit(profile, people.ada, max_num_seqs=32)  # v2: olga's v1 + ada
    restored = profile_restore_version(
        version=profile.versions.get(number=1), restored_by=people.alice
    )  # v3: olga's v1 again, restored by alice; ada's change is gone
    assert sorted(restored.authors) == sorted([people.olga.pk, people.alice.pk])
    assert restored.copied_from == profile.versions.get(number=1)
