"""Deploy requests and approvals (services), without a real host: the host's current unit
is read through `deploys.selectors.read_host_unit`, replaced by a dict (`on_host`).

Fixtures (conftest.py): olga requests, alice and bob approve, ada is an admin, vic only
looks.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.utils import timezone

from audit.models import AuditEvent
from deploys import selectors
from deploys.approvals import approval_problems
from deploys.models import DeployRequest, Host
from deploys.services.deploy_requests import (
    ApprovalVoid,
    RequestNotPending,
    deploy_request_approve,
    deploy_request_reject,
    expire_stale_requests,
)
from hostops.channel import HostKeyMismatch, HostUnreachable
from tests.deploys.helpers import OLD_UNIT, Enqueued, FakeHosts, People
from tests.units.factories import baseline
from units.models import ProfileVersion, ServiceProfile
from units.rendering import render_unit
from units.services import profile_create, profile_update

Status = DeployRequest.Status


def kinds() -> list[str]:
    return list(AuditEvent.objects.order_by("id").values_list("kind", flat=True))


# -- requesting ----------------------------------------------------------------------------


def test_request_stores_exact_text_host_unit_and_deadline(
    make_request: Callable[..., DeployRequest], version: ProfileVersion
) -> None:
    before = timezone.now()
    request = make_request()
    assert request.status == Status.PENDING
    assert request.unit_name == "vllm-kimi-k25-int4"
    assert request.unit_text == version.unit_text
    assert request.unit_sha256 == hashlib.sha256(request.unit_text.encode()).hexdigest()
    assert request.host_unit_text == OLD_UNIT.decode()
    assert request.host_unit_sha256 == hashlib.sha256(OLD_UNIT).hexdigest()
    assert request.lint_findings == []
    assert (
        before + timedelta(hours=24) <= request.expires_at <= timezone.now() + timedelta(hours=24)
    )
    event = AuditEvent.objects.get(kind="deploy.requested")
    assert event.actor_name == "olga"
    assert event.host_name == "gpu-a" and event.profile_name == "vllm-kimi-k25-int4"
    assert event.payload["unit_sha256"] == request.unit_sha256
    assert event.payload["version"] == 1


def test_absent_unit_on_host_is_stored_as_empty_hash(
    make_request: Callable[..., DeployRequest], on_host: FakeHosts
) -> None:
    on_host.files.clear()
    request = make_request()
    assert request.host_unit_sha256 == "" and request.host_unit_text == ""


def test_approval_ttl_comes_from_settings(
    make_request: Callable[..., DeployRequest], settings: Any
) -> None:
    settings.DEPLOY_APPROVAL_TTL_HOURS = 2
    request = make_request()
    assert request.expires_at - request.requested_at < timedelta(hours=2, seconds=5)


def test_new_unit_name_reads_and_targets_that_unit(
    make_request: Callable[..., DeployRequest], on_host: FakeHosts
) -> None:
    request = make_request(unit_name="vllm-kimi-next")
    assert request.unit_name == "vllm-kimi-next"
    assert on_host.reads == [("gpu-a", "vllm-kimi-next")]
    assert request.host_unit_sha256 == ""  # the old unit stays untouched as the fallback


def test_viewer_cannot_request(
    make_request: Callable[..., DeployRequest], people: People, on_host: FakeHosts
) -> None:
    with pytest.raises(PermissionDenied):
        make_request(requested_by=people.vic)
    with pytest.raises(PermissionDenied):
        make_request(requested_by=people.alice)  # approvers approve, they do not request
    assert not DeployRequest.objects.exists()
    assert on_host.reads == []


@pytest.mark.parametrize(
    "name",
    ["../../etc/passwd", "a/b", "x;reboot", "x$(id)", "x`id`", "a b", "-rf", "x|y", "x.service"],
)
def test_unsafe_unit_names_are_refused_before_touching_the_host(
    make_request: Callable[..., DeployRequest], on_host: FakeHosts, name: str
) -> None:
    with pytest.raises(ValidationError) as info:
        make_request(unit_name=name)
    assert "unit_name" in info.value.message_dict
    assert on_host.reads == []
    assert not DeployRequest.objects.exists()


def test_unreachable_host_is_a_clear_error_and_nothing_is_stored(
    make_request: Callable[..., DeployRequest], on_host: FakeHosts
) -> None:
    on_host.error = HostUnreachable("cannot connect to 10.0.0.7:22: timed out")
    with pytest.raises(ValidationError) as info:
        make_request()
    assert "Cannot read the current unit on gpu-a" in info.value.messages[0]
    assert "timed out" in info.value.messages[0]
    assert not DeployRequest.objects.exists()
    assert "deploy.requested" not in kinds()


def test_changed_host_key_is_a_clear_error(
    make_request: Callable[..., DeployRequest], on_host: FakeHosts
) -> None:
    on_host.error = HostKeyMismatch("10.0.0.7", 22, "SHA256:pinned", "SHA256:other")
    with pytest.raises(ValidationError) as info:
        make_request()
    assert "does not match the pinned key" in info.value.messages[0]
    assert not DeployRequest.objects.exists()


def test_unpinned_or_archived_host_is_refused(
    make_request: Callable[..., DeployRequest], host: Host, on_host: FakeHosts
) -> None:
    Host.objects.filter(pk=host.pk).update(host_key="")
    host.refresh_from_db()
    with pytest.raises(ValidationError, match="not pinned"):
        make_request(host=host)
    Host.objects.filter(pk=host.pk).update(host_key="x", archived=True)
    host.refresh_from_db()
    with pytest.raises(ValidationError, match="archived"):
        make_request(host=host)
    assert on_host.reads == []


def test_an_older_version_cannot_be_requested(
    make_request: Callable[..., DeployRequest], profile: ServiceProfile, people: People
) -> None:
    v1 = profile.versions.get()
    profile_update(profile=profile, data={"max_num_seqs": 32}, updated_by=people.olga)
    with pytest.raises(ValidationError, match="not the latest version"):
        make_request(profile_version=v1)


def test_huge_unit_text_is_refused_at_request_time(
    make_request: Callable[..., DeployRequest], people: People, profile: ServiceProfile
) -> None:
    # Saving refuses such a profile now (units.validation.size_errors); a version saved
    # before that rule is still refused here.
    data = {**profile.versions.get().data, "environment": {"BLOB": "x" * (300 * 1024)}}
    text = render_unit(data)
    big = ProfileVersion.objects.create(
        profile=profile,
        number=2,
        data=data,
        unit_text=text,
        unit_sha256=hashlib.sha256(text.encode()).hexdigest(),
        created_by=people.olga,
    )
    with pytest.raises(ValidationError, match="limit is 262144 bytes"):
        make_request(profile_version=big)
    assert not DeployRequest.objects.exists()


def test_huge_file_on_the_host_is_refused(
    make_request: Callable[..., DeployRequest], on_host: FakeHosts
) -> None:
    on_host.files["vllm-kimi-k25-int4"] = b"#" * (300 * 1024)
    with pytest.raises(ValidationError, match="not a unit specadmin wrote"):
        make_request()


def test_lint_errors_for_the_hosts_vllm_version_block_the_request(
    make_request: Callable[..., DeployRequest], people: People, host: Host
) -> None:
    suffix = profile_create(
        data=baseline(name="vllm-suffix", spec_method="suffix", spec_num_tokens=4),
        created_by=people.olga,
    )  # fine for its target vLLM 0.16.0 …
    Host.objects.filter(pk=host.pk).update(vllm_version="0.11.0", systemd_version=252)
    host.refresh_from_db()
    with pytest.raises(ValidationError) as info:  # … but the host runs 0.11.0
        make_request(profile_version=suffix.versions.get(), host=host)
    assert "VL303" in " ".join(info.value.messages)
    assert not DeployRequest.objects.exists()


def test_lints_for_the_hosts_probed_versions(
    make_request: Callable[..., DeployRequest], host: Host
) -> None:
    Host.objects.filter(pk=host.pk).update(vllm_version="0.33.0", systemd_version=257)
    host.refresh_from_db()
    make_request(host=host)
    payload = AuditEvent.objects.get(kind="deploy.requested").payload
    assert (payload["lint_systemd_version"], payload["lint_vllm_version"]) == (257, "0.33.0")


def test_unknown_host_vllm_version_falls_back_to_the_profile_target(
    version: ProfileVersion, host: Host
) -> None:
    host.vllm_version, host.systemd_version = "0.99.1", 252
    unit = selectors.unit_for_host(profile_version=version, host=host, unit_name="x")
    assert unit.vllm_version == "0.16.0"
    assert any("0.99.1" in note and "no catalog" in note for note in unit.notes)


def test_warnings_must_be_acknowledged(
    make_request: Callable[..., DeployRequest], people: People
) -> None:
    short_stop = profile_create(
        data=baseline(name="vllm-short-stop", timeout_stop_sec=5), created_by=people.olga
    )
    pv = short_stop.versions.get()
    with pytest.raises(ValidationError) as info:
        make_request(profile_version=pv)
    assert "acknowledge_warnings" in info.value.message_dict
    request = make_request(profile_version=pv, acknowledge_warnings=True)
    assert request.warnings_acknowledged
    assert [f["code"] for f in request.lint_findings] == ["OP405"]
    assert request.lint_findings[0]["severity"] == "warning"


# -- approving -----------------------------------------------------------------------------


def test_approval_pins_the_hash_and_enqueues_once_after_commit(
    make_request: Callable[..., DeployRequest],
    people: People,
    enqueued: Enqueued,
    django_capture_on_commit_callbacks: Any,
) -> None:
    request = make_request()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        approved = deploy_request_approve(request=request, approver=people.alice, comment="ok")
        assert enqueued.deploys == []  # not before the commit
    assert len(callbacks) == 1
    assert enqueued.deploys == [request.pk]
    assert approved.status == Status.APPROVED
    assert approved.approved_sha256 == approved.unit_sha256
    assert approved.decided_by == people.alice and approved.decision_comment == "ok"
    assert approval_problems(request=approved) == []
    event = AuditEvent.objects.get(kind="deploy.approved")
    assert event.actor_name == "alice" and event.payload["approved_sha256"] == approved.unit_sha256


def test_requester_can_never_approve_their_own_request_admins_neither(
    make_request: Callable[..., DeployRequest], people: People, enqueued: Enqueued
) -> None:
    own = make_request(requested_by=people.ada)
    with pytest.raises(PermissionDenied, match="someone else"):
        deploy_request_approve(request=own, approver=people.ada)
    with pytest.raises(PermissionDenied):
        deploy_request_reject(request=own, approver=people.ada, comment="mine")
    own.refresh_from_db()
    assert own.status == Status.PENDING and enqueued.deploys == []


def test_superuser_cannot_approve_own_request_either(
    make_request: Callable[..., DeployRequest], enqueued: Enqueued
) -> None:
    root = get_user_model().objects.create_superuser("root")
    own = make_request(requested_by=root)
    with pytest.raises(PermissionDenied):
        deploy_request_approve(request=own, approver=root)


def test_operator_and_viewer_cannot_approve(
    make_request: Callable[..., DeployRequest], people: People, enqueued: Enqueued
) -> None:
    request = make_request(requested_by=people.ada)
    for user in (people.olga, people.vic):
        with pytest.raises(PermissionDenied):
            deploy_request_approve(request=request, approver=user)
    request.refresh_from_db()
    assert request.status == Status.PENDING


def test_second_approval_is_refused_and_enqueues_nothing(
    make_request: Callable[..., DeployRequest],
    people: People,
    enqueued: Enqueued,
    django_capture_on_commit_callbacks: Any,
) -> None:
    request = make_request()
    stale_copy = DeployRequest.objects.get(pk=request.pk)  # what a second browser tab holds
    with django_capture_on_commit_callbacks(execute=True):
        deploy_request_approve(request=request, approver=people.alice)
        with pytest.raises(RequestNotPending, match="already approved, queued by alice"):
            deploy_request_approve(request=stale_copy, approver=people.bob)
    assert enqueued.deploys == [request.pk]
    assert kinds().count("deploy.approved") == 1


def test_approval_for_a_changed_page_is_refused(
    make_request: Callable[..., DeployRequest], people: People, enqueued: Enqueued
) -> None:
    request = make_request()
    with pytest.raises(ValidationError, match="changed since your page"):
        deploy_request_approve(request=request, approver=people.alice, expected_sha256="0" * 64)
    request.refresh_from_db()
    assert request.status == Status.PENDING


@pytest.mark.django_db(transaction=True)
def test_concurrent_approvals_in_threads_approve_once_and_enqueue_once(
    make_request: Callable[..., DeployRequest], people: People, enqueued: Enqueued
) -> None:
    request = make_request()
    approvers = [people.alice, people.bob] * 4
    barrier = threading.Barrier(len(approvers))
    outcomes: list[str] = []

    def click(approver: AbstractBaseUser) -> None:
        copy = DeployRequest.objects.get(pk=request.pk)
        barrier.wait()
        try:
            deploy_request_approve(request=copy, approver=approver)
            outcomes.append("approved")
        except RequestNotPending:
            outcomes.append("not pending")
        except Exception as exc:  # pragma: no cover - shown in the assertion
            outcomes.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=click, args=(a,)) for a in approvers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(outcomes) == ["approved"] + ["not pending"] * (len(approvers) - 1)
    assert enqueued.deploys == [request.pk]
    assert kinds().count("deploy.approved") == 1
    request.refresh_from_db()
    assert request.status == Status.APPROVED


def test_a_newer_profile_version_voids_the_approval(
    make_request: Callable[..., DeployRequest],
    people: People,
    profile: ServiceProfile,
    enqueued: Enqueued,
    django_capture_on_commit_callbacks: Any,
) -> None:
    request = make_request()
    profile_update(profile=profile, data={"max_num_seqs": 32}, updated_by=people.olga)
    with (
        django_capture_on_commit_callbacks(execute=True),
        pytest.raises(ApprovalVoid, match="newer version v2"),
    ):
        deploy_request_approve(request=request, approver=people.alice)
    request.refresh_from_db()
    assert request.status == Status.VOID
    assert "newer version v2 than the requested v1" in request.status_reason
    assert enqueued.deploys == []
    assert "deploy.voided" in kinds() and "deploy.approved" not in kinds()


def test_a_change_after_approval_makes_it_invalid_for_the_job(
    make_request: Callable[..., DeployRequest],
    people: People,
    profile: ServiceProfile,
    enqueued: Enqueued,
) -> None:
    request = deploy_request_approve(request=make_request(), approver=people.alice)
    profile_update(profile=profile, data={"max_num_seqs": 32}, updated_by=people.olga)
    problems = approval_problems(request=request)
    assert len(problems) == 1 and "newer version v2" in problems[0]


def test_a_renderer_change_makes_the_approval_invalid(
    make_request: Callable[..., DeployRequest],
    people: People,
    enqueued: Enqueued,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    request = deploy_request_approve(request=make_request(), approver=people.alice)
    monkeypatch.setattr(selectors, "render_unit", lambda data: "[Service]\nExecStart=/bin/false\n")
    assert any("renders to a different unit" in p for p in approval_problems(request=request))


def test_tampered_approved_hash_is_a_problem(
    make_request: Callable[..., DeployRequest], people: People, enqueued: Enqueued
) -> None:
    request = deploy_request_approve(request=make_request(), approver=people.alice)
    request.approved_sha256 = "f" * 64
    assert "the approved hash is not the hash of the unit text" in approval_problems(
        request=request
    )


def test_pending_and_rejected_requests_are_not_runnable(
    make_request: Callable[..., DeployRequest],
) -> None:
    assert "not approved" in approval_problems(request=make_request())[0]


# -- expiry --------------------------------------------------------------------------------


def test_an_expired_request_cannot_be_approved_and_is_marked_expired(
    make_request: Callable[..., DeployRequest], people: People, enqueued: Enqueued
) -> None:
    request = make_request()
    later = request.expires_at + timedelta(seconds=1)
    with pytest.raises(RequestNotPending, match="expired"):
        deploy_request_approve(request=request, approver=people.alice, now=later)
    request.refresh_from_db()
    assert request.status == Status.EXPIRED
    assert enqueued.deploys == []
    assert kinds()[-1] == "deploy.expired"


def test_an_approval_not_run_before_the_deadline_is_invalid(
    make_request: Callable[..., DeployRequest], people: People, enqueued: Enqueued
) -> None:
    request = deploy_request_approve(request=make_request(), approver=people.alice)
    later = request.expires_at + timedelta(minutes=1)
    assert any("expired" in p for p in approval_problems(request=request, now=later))


def test_expire_stale_requests_marks_only_overdue_pending_ones(
    make_request: Callable[..., DeployRequest], people: People, enqueued: Enqueued
) -> None:
    now = timezone.now()
    overdue = make_request(now=now - timedelta(hours=25))
    fresh = make_request(now=now)
    approved = deploy_request_approve(
        request=make_request(now=now - timedelta(hours=23)), approver=people.alice, now=now
    )
    assert expire_stale_requests(now + timedelta(hours=1, minutes=30)) == 1
    statuses = dict(DeployRequest.objects.values_list("pk", "status"))
    assert statuses[overdue.pk] == Status.EXPIRED
    assert statuses[fresh.pk] == Status.PENDING
    assert statuses[approved.pk] == Status.APPROVED  # the job refuses it via approval_problems
    assert expire_stale_requests(now + timedelta(hours=2)) == 0  # idempotent
    assert kinds().count("deploy.expired") == 1


# -- rejecting -----------------------------------------------------------------------------


def test_reject_needs_a_reason_and_ends_the_request(
    make_request: Callable[..., DeployRequest], people: People, enqueued: Enqueued
) -> None:
    request = make_request()
    with pytest.raises(ValidationError, match="Say why"):
        deploy_request_reject(request=request, approver=people.bob, comment="  ")
    rejected = deploy_request_reject(request=request, approver=people.bob, comment="wrong host")
    assert rejected.status == Status.REJECTED and rejected.decision_comment == "wrong host"
    with pytest.raises(RequestNotPending, match="rejected"):
        deploy_request_approve(request=request, approver=people.alice)
    assert enqueued.deploys == []
    assert AuditEvent.objects.get(kind="deploy.rejected").payload["comment"] == "wrong host"


def test_a_probed_host_whose_vllm_version_is_unknown_is_not_said_to_be_unprobed(
    host: Host, version: Any
) -> None:
    # A new host's probe reads systemd but has no approved executable to ask for vLLM's.
    host.systemd_version, host.probed_at = 252, timezone.now()
    _, vllm, notes = selectors.lint_versions(profile_version=version, host=host)
    assert vllm == version.data["target_vllm_version"]
    assert notes == [
        f"{host.name}'s vLLM version is not known yet: linted for the profile's target vLLM {vllm}"
    ]
