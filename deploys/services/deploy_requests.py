"""Writes for deploy requests: request, approve, reject, expire.

Every decision on a request is a conditional UPDATE on its status (`WHERE status =
'pending'`) whose row count says who won, as healthchecks claims work: two approvers (or
one double click, threads, processes, PostgreSQL or SQLite) approve once and enqueue one
job, without a lock server. The job is enqueued with `transaction.on_commit`, so a worker
never sees a row that was rolled back. Each change appends its audit event in the same
transaction. Permissions are checked here, not only in views: every caller gets them. The
read-only approval rules live in `deploys.approvals`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from audit.models import AuditKind
from audit.services import record
from deploys import existing_units, signals
from deploys.approvals import approval_problems, approval_ttl, refuse_own_decision
from deploys.existing_units import ExistingUnit
from deploys.job_settings import job_settings, settings_sha256
from deploys.jobs import queue
from deploys.models import DeployRequest, Host
from deploys.permissions import APPROVE_DEPLOY, REQUEST_DEPLOY, require
from deploys.running import record_read, versions_by_sha
from deploys.selectors import (
    MAX_UNIT_BYTES,
    DeployPreview,
    HostUnit,
    deploy_preview,
    latest_version_number,
)
from deploys.services.hosts import transport_error
from deploys.unit_policy import check_unit_name, overwrite_problems
from hostops.channel import TransportError
from units.models import ProfileVersion

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser as User

Status = DeployRequest.Status


class RequestNotPending(ValidationError):
    """Someone else decided first (or it expired): nothing was changed by this call."""


class ApprovalVoid(ValidationError):
    """Approving found the request out of date; it is now void and nothing was enqueued."""


def _audit(kind: str, actor: User | None, request: DeployRequest, payload: dict) -> None:
    record(
        kind=kind,
        actor=actor,
        obj=request,
        host_name=request.host.name,
        profile_name=request.profile_version.profile.name,
        payload={"request": request.pk, **payload},
    )


def _check_deployable(*, profile_version: ProfileVersion, host: Host) -> None:
    if host.archived:
        raise ValidationError({"host": [f"{host.name} is archived."]})
    if host.transport == Host.Transport.SSH and not host.key_pinned:
        raise ValidationError({"host": [f"The host key of {host.name} is not pinned yet."]})
    profile = profile_version.profile
    if profile.archived:
        raise ValidationError({"profile_version": [f"Profile {profile.name} is archived."]})
    latest = latest_version_number(profile_id=profile.pk)
    if latest is not None and latest > profile_version.number:
        raise ValidationError(
            {
                "profile_version": [
                    f"{profile.name} v{profile_version.number} is not the latest version "
                    f"(v{latest}); request the latest one (restore an old version to roll back)."
                ]
            }
        )


def _checked_unit_name(unit_name: str, profile_version: ProfileVersion) -> str:
    """The unit name asked for (default: the profile's name), valid and not denied."""
    unit_name = unit_name.strip() or profile_version.profile.name
    check_unit_name(unit_name)
    return unit_name


def _unit_preview(
    preview: DeployPreview | None,
    *,
    profile_version: ProfileVersion,
    host: Host,
    unit_name: str,
) -> DeployPreview:
    """The caller's preview when it is of this unit, else the host read live now."""
    if preview is not None:
        if preview.unit.unit_name != unit_name:
            raise ValueError(f"the preview is of {preview.unit.unit_name}, not {unit_name}")
        return preview
    try:
        return deploy_preview(profile_version=profile_version, host=host, unit_name=unit_name)
    except TransportError as exc:
        raise transport_error(f"Cannot read the current unit on {host.name}", exc) from exc


def _loaded_unit(existing: ExistingUnit | None, *, host: Host, unit_name: str) -> ExistingUnit:
    """The caller's answer of systemd when it is of this unit, else asked now."""
    if existing is not None:
        if existing.unit_name != unit_name:
            raise ValueError(f"systemd was asked about {existing.unit_name}, not {unit_name}")
        return existing
    try:
        return existing_units.read_existing_unit(host=host, unit_name=unit_name)
    except TransportError as exc:
        raise transport_error(f"Cannot ask systemd on {host.name} about {unit_name}", exc) from exc


def _check_sizes(preview: DeployPreview, *, host: Host, unit_name: str) -> None:
    """Neither our unit nor the one on the host is larger than a push may be."""
    unit = preview.unit
    if unit.size > MAX_UNIT_BYTES:
        raise ValidationError(
            f"The unit text is {unit.size} bytes; the limit is {MAX_UNIT_BYTES} bytes."
        )
    if preview.host_unit is not None and len(preview.host_unit) > MAX_UNIT_BYTES:
        raise ValidationError(
            f"{host.name} has a {len(preview.host_unit)}-byte {unit_name}.service (limit "
            f"{MAX_UNIT_BYTES}): that is not a unit specadmin wrote; inspect it on the host."
        )


def _check_findings(unit: HostUnit, *, acknowledge_warnings: bool) -> None:
    """Lint errors block; warnings need the requester's acknowledgement."""
    if unit.errors:
        raise ValidationError(
            [f"Lint error {f['code']} (line {f['line']}): {f['message']}" for f in unit.errors],
            code="lint_errors",
        )
    if unit.warnings and not acknowledge_warnings:
        raise ValidationError(
            {
                "acknowledge_warnings": [
                    f"The unit has {len(unit.warnings)} lint warning(s): read and acknowledge them."
                ]
            }
        )


@dataclass(frozen=True)
class PreparedRequest:
    """What `deploy_request_prepare` read and checked for one host: the unit name, the
    rendered and linted unit with the host's current one (`preview`), and what systemd
    loads under that name (`existing`)."""

    unit_name: str
    preview: DeployPreview
    existing: ExistingUnit


def deploy_request_prepare(
    *,
    profile_version: ProfileVersion,
    host: Host,
    requested_by: User,
    unit_name: str = "",
    acknowledge_warnings: bool = False,
    preview: DeployPreview | None = None,
    existing: ExistingUnit | None = None,
) -> PreparedRequest:
    """Every check of a deploy request, with the host read live (no transaction open):
    the permission, the host and version deployable, the unit name, the sizes, no foreign
    unit overwritten, lint errors block and warnings acknowledged. Raises ValidationError
    (what and where). A rollout (`fleet`) prepares each of its hosts this way, then
    creates the requests from what was read, so one host is not read twice."""
    require(requested_by, REQUEST_DEPLOY, "request deploys")
    unit_name = _checked_unit_name(unit_name or "", profile_version)
    _check_deployable(profile_version=profile_version, host=host)
    preview = _unit_preview(
        preview, profile_version=profile_version, host=host, unit_name=unit_name
    )
    _check_sizes(preview, host=host, unit_name=unit_name)
    existing = _loaded_unit(existing, host=host, unit_name=unit_name)
    foreign = overwrite_problems(
        host=host, unit_name=unit_name, current=preview.host_unit, existing=existing
    )
    if foreign:
        raise ValidationError({"unit_name": foreign})
    _check_findings(preview.unit, acknowledge_warnings=acknowledge_warnings)
    return PreparedRequest(unit_name=unit_name, preview=preview, existing=existing)


def deploy_request_create(
    *,
    profile_version: ProfileVersion,
    host: Host,
    requested_by: User,
    unit_name: str = "",
    acknowledge_warnings: bool = False,
    preview: DeployPreview | None = None,
    existing: ExistingUnit | None = None,
    now: datetime | None = None,
) -> DeployRequest:
    """Request "deploy version V to host H as unit U" (U defaults to the profile name; a
    new name keeps the old unit on the host as a fallback).

    The host's current unit is read live (before the transaction: no network I/O while
    holding the database write lock) and stored with its hash, so the job can refuse to
    overwrite a file that changed after the approver saw the diff. `preview`: that read,
    when the caller has just made it for the same version, host and unit (the request
    page shows it), so the host is not read twice; `existing`: likewise, what systemd
    loads under that name (`deploys.existing_units`: a vendor unit the push would shadow,
    drop-ins), which needs an admin's adoption. Lint errors block; warnings need
    `acknowledge_warnings` (`deploy_request_prepare` checks all of it).
    """
    prepared = deploy_request_prepare(
        profile_version=profile_version,
        host=host,
        requested_by=requested_by,
        unit_name=unit_name,
        acknowledge_warnings=acknowledge_warnings,
        preview=preview,
        existing=existing,
    )
    unit_name, preview, existing = prepared.unit_name, prepared.preview, prepared.existing
    unit = preview.unit
    settings = job_settings(profile_version=profile_version)
    now = now or timezone.now()
    with transaction.atomic():
        # Checked again in the transaction (on SQLite under its write lock): a version
        # saved meanwhile wins; one saved after this still voids the approval.
        _check_deployable(profile_version=profile_version, host=host)
        request = DeployRequest.objects.create(
            profile_version=profile_version,
            host=host,
            unit_name=unit_name,
            unit_text=unit.text,
            unit_sha256=unit.sha256,
            # Shown in a diff only; a NUL would break PostgreSQL text. The hash is exact.
            host_unit_text=preview.host_unit_text.replace("\0", "\ufffd"),
            host_unit_sha256=preview.host_unit_sha256,
            host_loaded_unit=existing.as_json(),
            lint_findings=unit.findings,
            job_settings=settings,
            job_settings_sha256=settings_sha256(settings),
            warnings_acknowledged=bool(unit.warnings) and acknowledge_warnings,
            requested_by=requested_by,
            expires_at=now + approval_ttl(),
        )
        record_read(
            host=host, unit_name=unit_name, data=preview.host_unit, step="request", request=request
        )
        replaced = versions_by_sha([preview.host_unit_sha256]).get(preview.host_unit_sha256, ())
        _audit(
            AuditKind.DEPLOY_REQUESTED,
            requested_by,
            request,
            {
                "version": profile_version.number,
                "unit_name": unit_name,
                "unit_sha256": unit.sha256,
                "job_settings": settings,
                "host_unit_sha256": preview.host_unit_sha256,
                "host_loaded_from": [f.path for f in existing.files],
                "host_unit_versions": [str(v) for v in replaced],
                "lint_systemd_version": unit.systemd_version,
                "lint_vllm_version": unit.vllm_version,
                "warnings": [f["code"] for f in unit.warnings],
                "expires_at": request.expires_at.isoformat(),
            },
        )
        signals.send(signals.request_created, DeployRequest, request=request)
    return request


# -- decisions -----------------------------------------------------------------------------


def _expire(request: DeployRequest, now: datetime, actor: User | None = None) -> bool:
    """pending → expired if past its deadline; True if this call did it."""
    with transaction.atomic():
        done = DeployRequest.objects.filter(
            pk=request.pk, status=Status.PENDING, expires_at__lte=now
        ).update(status=Status.EXPIRED, status_reason="Not decided before it expired.")
        if done:
            _audit(
                AuditKind.DEPLOY_EXPIRED,
                actor,
                request,
                {"expires_at": request.expires_at.isoformat()},
            )
    return bool(done)


def _not_pending(request: DeployRequest, now: datetime, actor: User) -> RequestNotPending:
    """The error for a decision that found nothing to claim (expiring it if due)."""
    request.refresh_from_db()
    if request.status == Status.PENDING and request.expires_at <= now:
        _expire(request, now, actor)
        request.refresh_from_db()
    if request.status == Status.EXPIRED:
        return RequestNotPending(
            f"Request #{request.pk} expired at {request.expires_at:%Y-%m-%d %H:%M %Z}; "
            "ask for a new one.",
            code="expired",
        )
    who = f" by {request.decided_by}" if request.decided_by_id else ""
    return RequestNotPending(
        f"Request #{request.pk} is already {request.get_status_display().lower()}{who}.",
        code="not_pending",
    )


def deploy_request_approve(
    *,
    request: DeployRequest,
    approver: User,
    comment: str = "",
    expected_sha256: str | None = None,
    now: datetime | None = None,
    enqueue: bool = True,
) -> DeployRequest:
    """Approve: claim pending → approved (conditional UPDATE), pin the hash, re-check
    validity, enqueue the job on commit. Exactly one of any number of concurrent calls
    succeeds; the others get RequestNotPending. A request found out of date becomes void
    (ApprovalVoid). `expected_sha256`: the hash the approver's page showed.
    `enqueue=False`: approved but not queued; whoever asked for that queues it
    (`deploys.jobs.queue.enqueue_deploy`) when its turn comes (a rollout's batches,
    docs/rollouts.md), and the job claims it exactly once as usual.
    """
    require(approver, APPROVE_DEPLOY, "approve deploy requests")
    refuse_own_decision(request, approver)
    if expected_sha256 is not None and expected_sha256 != request.unit_sha256:
        raise ValidationError("The unit changed since your page was loaded: reload and review.")
    now = now or timezone.now()
    problems: list[str] = []
    with transaction.atomic():
        claimed = DeployRequest.objects.filter(
            pk=request.pk, status=Status.PENDING, expires_at__gt=now
        ).update(
            status=Status.APPROVED,
            decided_by=approver,
            decided_at=now,
            decision_comment=comment.strip(),
            approved_sha256=F("unit_sha256"),
            approved_settings_sha256=F("job_settings_sha256"),
        )
        if claimed:
            request.refresh_from_db()
            problems = approval_problems(request=request, now=now)
            if problems:
                reason = "; ".join(problems)
                DeployRequest.objects.filter(pk=request.pk, status=Status.APPROVED).update(
                    status=Status.VOID, status_reason=reason
                )
                _audit(AuditKind.DEPLOY_VOIDED, approver, request, {"reason": reason})
            else:
                _audit(
                    AuditKind.DEPLOY_APPROVED,
                    approver,
                    request,
                    {
                        "approved_sha256": request.approved_sha256,
                        "approved_settings_sha256": request.approved_settings_sha256,
                        "comment": comment.strip(),
                    },
                )
                if enqueue:
                    transaction.on_commit(functools.partial(queue.enqueue_deploy, request.pk))
    if not claimed:
        raise _not_pending(request, now, approver)
    request.refresh_from_db()
    if problems:
        raise ApprovalVoid(f"The request is void: {'; '.join(problems)}.", code="void")
    return request


def deploy_request_reject(
    *, request: DeployRequest, approver: User, comment: str, now: datetime | None = None
) -> DeployRequest:
    """Reject with a reason (required: the requester needs to know what to change)."""
    require(approver, APPROVE_DEPLOY, "reject deploy requests")
    refuse_own_decision(request, approver)
    comment = comment.strip()
    if not comment:
        raise ValidationError({"comment": ["Say why the request is rejected."]})
    now = now or timezone.now()
    with transaction.atomic():
        claimed = DeployRequest.objects.filter(
            pk=request.pk, status=Status.PENDING, expires_at__gt=now
        ).update(
            status=Status.REJECTED,
            decided_by=approver,
            decided_at=now,
            decision_comment=comment,
            status_reason="",  # the status and the decision comment say it all
        )
        if claimed:
            _audit(AuditKind.DEPLOY_REJECTED, approver, request, {"comment": comment})
    if not claimed:
        raise _not_pending(request, now, approver)
    request.refresh_from_db()
    return request


def expire_stale_requests(now: datetime | None = None) -> int:
    """Mark every pending request past its deadline expired (for a periodic job);
    returns how many this call expired. Safe to run concurrently: each row is claimed
    with its own conditional UPDATE."""
    now = now or timezone.now()
    stale = DeployRequest.objects.filter(status=Status.PENDING, expires_at__lte=now).select_related(
        "host", "profile_version__profile"
    )
    return sum(_expire(request, now) for request in stale)


__all__ = [
    "ApprovalVoid",
    "PreparedRequest",
    "RequestNotPending",
    "deploy_request_approve",
    "deploy_request_create",
    "deploy_request_prepare",
    "deploy_request_reject",
    "expire_stale_requests",
]
