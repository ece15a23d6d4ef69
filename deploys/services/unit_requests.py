"""Requests about a unit specadmin already deployed: restart it, roll it back to an earlier
deployed version, or remove it; and the requester withdrawing, or someone cancelling, a job.

A restart, rollback or removal is a `DeployRequest` like a deploy (kind restart / rollback
/ remove) and goes through the same approval rule (`deploys.approvals`), pinned to the
exact text it acts on: the unit read live from the host (restart, removal) or the earlier
push it brings back (rollback). One exception, set by an admin per host and audited:
"restarts need no approval" (`Host.restarts_without_approval`) approves a restart at once.
"""

from __future__ import annotations

import dataclasses
import functools
from datetime import datetime
from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from audit.models import AuditKind
from audit.services import record
from deploys import signals
from deploys.approvals import approval_ttl
from deploys.job_settings import job_settings, settings_sha256
from deploys.jobs import queue
from deploys.models import DeployRequest, Host, PushedUnit
from deploys.permissions import CANCEL_JOB, CHANGE_HOST, REQUEST_DEPLOY, require
from deploys.running import record_read, version_names, version_of_text, versions_by_sha
from deploys.selectors import (
    MAX_UNIT_BYTES,
    deployed_unit,
    finding_json,
    lint_versions,
    read_host_unit,
)
from deploys.services.deploy_requests import RequestNotPending
from deploys.services.hosts import transport_error
from hostops.channel import TransportError
from hostops.channel.push import sha256_hex
from linting.findings import Severity
from linting.options import LintOptions
from units.linting import lint_rendered
from units.models import ProfileVersion

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser as User

Kind = DeployRequest.Kind
Status = DeployRequest.Status


def _audit(kind: str, actor: User | None, request: DeployRequest, payload: dict) -> None:
    record(
        kind=kind,
        actor=actor,
        obj=request,
        host_name=request.host.name,
        profile_name=request.profile_version.profile.name,
        payload={"request": request.pk, "kind": request.kind, **payload},
    )


def _live_unit(host: Host, unit_name: str) -> bytes:
    """The unit file on the host now; ValidationError when unreachable or absent."""
    try:
        live = read_host_unit(host=host, unit_name=unit_name)
    except TransportError as exc:
        raise transport_error(f"Cannot read {unit_name}.service on {host.name}", exc) from exc
    if live is None:
        raise ValidationError(f"{unit_name}.service is not on {host.name} (any more).")
    if len(live) > MAX_UNIT_BYTES:
        raise ValidationError(f"{unit_name}.service on {host.name} is over {MAX_UNIT_BYTES} bytes.")
    return live


def _deployed(host: Host, unit_name: str) -> PushedUnit:
    deployed = deployed_unit(host=host, unit_name=unit_name)
    if deployed is None or deployed.request is None:
        raise ValidationError(
            f"specadmin has not deployed {unit_name}.service on {host.name} (or removed it)."
        )
    return deployed


def _check_host(host: Host) -> None:
    if host.archived:
        raise ValidationError({"host": [f"{host.name} is archived."]})
    if host.transport == Host.Transport.SSH and not host.key_pinned:
        raise ValidationError({"host": [f"The host key of {host.name} is not pinned yet."]})


def _lint(text: str, unit_name: str, version: ProfileVersion, host: Host) -> list[dict]:
    """Findings of `text` for the host's versions (errors block, as for a deploy)."""
    systemd, vllm, _ = lint_versions(profile_version=version, host=host)
    options = dataclasses.replace(LintOptions(), systemd_version=systemd, vllm_version=vllm)
    name = f"{unit_name}.service"
    report = lint_rendered(text, name, name, options)
    errors = [f for f in report.findings if f.severity >= Severity.ERROR]
    if errors:
        raise ValidationError(
            [f"Lint error {f.code} (line {f.span.start.line}): {f.message}" for f in errors],
            code="lint_errors",
        )
    return [finding_json(f) for f in report.findings]


def _version_of(sha: str, push: PushedUnit) -> ProfileVersion:
    """The profile version a request about the text `sha` is about (`deploys.running`):
    the version(s) that text is, not the job that last wrote it (a rollback's push was
    written by the job of the version that failed). A text that is no version keeps the
    version of the job that wrote it."""
    assert push.request is not None
    prefer = push.request.profile_version
    return version_of_text(sha, prefer=prefer) or prefer


def _create(
    *,
    kind: str,
    host: Host,
    unit_name: str,
    version: ProfileVersion,
    text: str,
    live: bytes,
    requested_by: User,
    findings: list[dict],
    now: datetime,
    rollback_to: PushedUnit | None = None,
) -> DeployRequest:
    live_text = live.decode("utf-8", "replace").replace("\0", "\ufffd")
    unit_sha = sha256_hex(text.encode("utf-8"))
    named = versions_by_sha([unit_sha, sha256_hex(live)])
    # The job runs with the settings of the version its text is (the approval covers them).
    settings = job_settings(profile_version=version)
    with transaction.atomic():
        request = DeployRequest.objects.create(
            kind=kind,
            profile_version=version,
            host=host,
            unit_name=unit_name,
            unit_text=text,
            unit_sha256=unit_sha,
            host_unit_text=live_text,
            host_unit_sha256=sha256_hex(live),
            lint_findings=findings,
            job_settings=settings,
            job_settings_sha256=settings_sha256(settings),
            warnings_acknowledged=bool(findings),
            requested_by=requested_by,
            expires_at=now + approval_ttl(),
            rollback_to=rollback_to,
        )
        record_read(host=host, unit_name=unit_name, data=live, step="request", request=request)
        _audit(
            AuditKind.DEPLOY_REQUESTED,
            requested_by,
            request,
            {
                "unit_name": unit_name,
                "unit_sha256": request.unit_sha256,
                "host_unit_sha256": request.host_unit_sha256,
                "job_settings": settings,
                "rollback_to_push": rollback_to.pk if rollback_to else None,
                "version": version.number,
                "unit_versions": [str(v) for v in named.get(unit_sha, ())],
                "host_unit_versions": [str(v) for v in named.get(sha256_hex(live), ())],
                "expires_at": request.expires_at.isoformat(),
            },
        )
        if kind == Kind.RESTART and host.restarts_without_approval:
            _approve_automatically(request, now)
        request.refresh_from_db()
        signals.send(signals.request_created, DeployRequest, request=request)
    request.refresh_from_db()
    return request


def _approve_automatically(request: DeployRequest, now: datetime) -> None:
    """A restart on a host whose admin said restarts need no approval."""
    reason = f"restarts on {request.host.name} need no approval (set by an admin)"
    DeployRequest.objects.filter(pk=request.pk, status=Status.PENDING).update(
        status=Status.APPROVED,
        decided_at=now,
        decision_comment=reason,
        approved_sha256=request.unit_sha256,
        approved_settings_sha256=request.job_settings_sha256,
    )
    _audit(
        AuditKind.DEPLOY_APPROVED,
        None,
        request,
        {
            "approved_sha256": request.unit_sha256,
            "approved_settings_sha256": request.job_settings_sha256,
            "automatic": True,
            "comment": reason,
        },
    )
    transaction.on_commit(functools.partial(queue.enqueue_deploy, request.pk))


def restart_request_create(
    *, host: Host, unit_name: str, requested_by: User, now: datetime | None = None
) -> DeployRequest:
    """Request a restart of the unit specadmin deployed, exactly as it is on the host."""
    require(requested_by, REQUEST_DEPLOY, "request restarts")
    _check_host(host)
    push = _deployed(host, unit_name)
    live = _live_unit(host, unit_name)
    if sha256_hex(live) != push.sha256:
        raise ValidationError(
            f"{unit_name}.service on {host.name} is not the unit specadmin deployed (changed "
            "on the host since): request a deploy to see the difference."
        )
    return _as_it_is_on_the_host(Kind.RESTART, host, unit_name, push, live, requested_by, now)


def _as_it_is_on_the_host(
    kind: str,
    host: Host,
    unit_name: str,
    push: PushedUnit,
    live: bytes,
    requested_by: User,
    now: datetime | None,
) -> DeployRequest:
    """A request about the unit exactly as the host has it (restart, remove): its text is
    the live file, so there is nothing new to lint."""
    return _create(
        kind=kind,
        host=host,
        unit_name=unit_name,
        version=_version_of(sha256_hex(live), push),
        text=live.decode("utf-8", "replace"),
        live=live,
        requested_by=requested_by,
        findings=[],
        now=now or timezone.now(),
    )


def rollback_request_create(
    *, host: Host, to: PushedUnit, requested_by: User, now: datetime | None = None
) -> DeployRequest:
    """Request "put back the text of that earlier push" (`deploys.running.rollback_choices`):
    the request is about the profile version that text is, whichever job wrote it."""
    require(requested_by, REQUEST_DEPLOY, "request rollbacks")
    _check_host(host)
    if to.host_id != host.pk or not to.text or to.request is None:
        raise ValidationError("That is not an earlier deployed version of a unit on this host.")
    unit_name = to.unit_name
    _deployed(host, unit_name)
    version = version_of_text(to.sha256, prefer=to.request.profile_version)
    if version is None:
        raise ValidationError(
            f"That text of {unit_name}.service is no profile version (sha256 {to.sha256[:12]}…): "
            "request a deploy of a version instead."
        )
    live = _live_unit(host, unit_name)
    if sha256_hex(live) == to.sha256:
        named = version_names(versions_by_sha([to.sha256]).get(to.sha256, ()))
        raise ValidationError(f"{host.name} already runs {named} as {unit_name}.service.")
    findings = _lint(to.text, unit_name, version, host)
    return _create(
        kind=Kind.ROLLBACK,
        host=host,
        unit_name=unit_name,
        version=version,
        text=to.text,
        live=live,
        requested_by=requested_by,
        findings=findings,
        now=now or timezone.now(),
        rollback_to=to,
    )


def remove_request_create(
    *, host: Host, unit_name: str, requested_by: User, now: datetime | None = None
) -> DeployRequest:
    """Request "stop, GPU-clean, disable and delete" the unit specadmin deployed."""
    require(requested_by, REQUEST_DEPLOY, "request removals")
    _check_host(host)
    push = _deployed(host, unit_name)
    live = _live_unit(host, unit_name)
    return _as_it_is_on_the_host(Kind.REMOVE, host, unit_name, push, live, requested_by, now)


# -- withdrawing and cancelling ------------------------------------------------------------


def deploy_request_withdraw(
    *, request: DeployRequest, user: User, now: datetime | None = None
) -> DeployRequest:
    """The requester takes a request back before it runs (pending, or approved and queued).

    A conditional UPDATE: if a worker claimed it first, it is running and this says so.
    """
    if request.requested_by_id != user.pk:
        raise PermissionDenied("Only the person who asked for this request can withdraw it.")
    now = now or timezone.now()
    with transaction.atomic():
        done = DeployRequest.objects.filter(
            pk=request.pk, status__in=(Status.PENDING, Status.APPROVED)
        ).update(
            status=Status.WITHDRAWN,
            status_reason=f"Withdrawn by {user} before it ran.",
            finished_at=now,
        )
        if done:
            _audit(AuditKind.DEPLOY_WITHDRAWN, user, request, {"was": request.status})
            signals.send_job_ended(request, str(Status.WITHDRAWN), f"Withdrawn by {user}.")
    request.refresh_from_db()
    if not done:
        hint = " Cancel the job instead." if request.status == Status.RUNNING else ""
        raise RequestNotPending(
            f"Request #{request.pk} is {request.get_status_display().lower()}: it can no "
            f"longer be withdrawn.{hint}",
            code="not_pending",
        )
    return request


def deploy_job_cancel(
    *, request: DeployRequest, user: User, now: datetime | None = None
) -> DeployRequest:
    """Cancel a queued job at once, or ask a running one to stop at its next step boundary
    (a readiness wait returns at once). The job then says what state the host is in."""
    require(user, CANCEL_JOB, "cancel deploy jobs")
    now = now or timezone.now()
    with transaction.atomic():
        queued = DeployRequest.objects.filter(pk=request.pk, status=Status.APPROVED).update(
            status=Status.CANCELLED,
            status_reason=f"cancelled by {user} before it ran",
            host_state="unchanged: the job never ran",
            cancel_requested_at=now,
            cancel_requested_by=user,
            finished_at=now,
        )
        if queued:
            _audit(AuditKind.DEPLOY_CANCELLED, user, request, {"when": "queued"})
            signals.send_job_ended(
                request, str(Status.CANCELLED), f"cancelled by {user} before it ran"
            )
        else:
            asked = DeployRequest.objects.filter(
                pk=request.pk, status=Status.RUNNING, cancel_requested_at__isnull=True
            ).update(cancel_requested_at=now, cancel_requested_by=user)
            if asked:
                _audit(AuditKind.DEPLOY_CANCEL_REQUESTED, user, request, {})
    request.refresh_from_db()
    if not (queued or asked):
        if request.status == Status.RUNNING:
            raise RequestNotPending("A cancel was already asked for; the job is stopping.")
        raise RequestNotPending(
            f"Request #{request.pk} is {request.get_status_display().lower()}: there is no "
            "job to cancel."
        )
    return request


def queued_job_drop(
    *, request: DeployRequest, reason: str, actor: User | None = None, now: datetime | None = None
) -> bool:
    """Close an approved job that was never queued and will not run (a rollout halted
    before its host's turn, docs/rollouts.md): approved → cancelled, "never ran", audited.
    A conditional UPDATE: False when it was no longer `approved` (a worker claimed it, or
    it ended otherwise), and then nothing is changed."""
    now = now or timezone.now()
    with transaction.atomic():
        dropped = DeployRequest.objects.filter(pk=request.pk, status=Status.APPROVED).update(
            status=Status.CANCELLED,
            status_reason=reason,
            host_state="unchanged: the job never ran",
            finished_at=now,
        )
        if dropped:
            _audit(AuditKind.DEPLOY_CANCELLED, actor, request, {"when": "queued", "reason": reason})
    return bool(dropped)


def host_set_restarts_without_approval(*, host: Host, value: bool, actor: User) -> Host:
    """An admin's per-host switch: restarts there are approved at once. Audited."""
    require(actor, CHANGE_HOST, "change hosts")
    if not getattr(actor, "is_staff", False) and not actor.has_perm("deploys.add_host"):
        raise PermissionDenied("Only an admin can change which requests need an approval.")
    with transaction.atomic():
        Host.objects.filter(pk=host.pk).update(restarts_without_approval=value)
        record(
            kind=AuditKind.HOST_SETTINGS_CHANGED,
            actor=actor,
            obj=host,
            host_name=host.name,
            payload={"restarts_without_approval": value},
        )
    host.refresh_from_db()
    return host


__all__ = [
    "deploy_job_cancel",
    "deploy_request_withdraw",
    "host_set_restarts_without_approval",
    "queued_job_drop",
    "remove_request_create",
    "restart_request_create",
    "rollback_request_create",
]
