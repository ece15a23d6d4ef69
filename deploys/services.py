"""Writes for hosts, deploy requests and approvals (HackSoft style: keyword-only, atomic).

Every decision on a request is a conditional UPDATE on its status (`WHERE status =
'pending'`) whose row count says who won, as healthchecks claims work: two approvers (or
one double click, threads, processes, PostgreSQL or SQLite) approve once and enqueue one
job, without a lock server. Jobs are enqueued with `transaction.on_commit`, so a worker
never sees a row that was rolled back. Each change appends its audit event in the same
transaction. Permissions are checked here, not only in views: every caller gets them.
"""

from __future__ import annotations

import functools
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from audit.services import record
from deploys.models import DeployRequest, Host
from deploys.selectors import (
    MAX_UNIT_BYTES,
    DeployPreview,
    deploy_preview,
    latest_version_number,
    rendered_text,
    sha256_hex,
)
from deploys.transports import TransportError
from deploys.transports.ssh import HostKeyInfo, fingerprint_sha256, parse_pinned_key
from deploys.transports.ssh import probe_host_key as _probe_host_key
from units.models import ProfileVersion
from units.names import validate_unit_name

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser as User

ADD_HOST = "deploys.add_host"
CHANGE_HOST = "deploys.change_host"
REQUEST_DEPLOY = "deploys.add_deployrequest"
APPROVE_DEPLOY = "deploys.approve_deployrequest"
KEY_PROBE_TIMEOUT = 10.0
DEFAULT_TTL_HOURS = 24
Status = DeployRequest.Status


class RequestNotPending(ValidationError):
    """Someone else decided first (or it expired): nothing was changed by this call."""


class ApprovalVoid(ValidationError):
    """Approving found the request out of date; it is now void and nothing was enqueued."""


def _require(user: User | None, perm: str, action: str) -> None:
    if user is None or not user.is_authenticated or not user.has_perm(perm):
        raise PermissionDenied(f"You are not allowed to {action}.")


def probe_host_key(host: str, port: int, timeout: float) -> HostKeyInfo:
    """Indirection so tests without a test host can stand in for the network."""
    return _probe_host_key(host, port, timeout)


def _audit_host(kind: str, actor: User | None, host: Host, payload: dict[str, Any]) -> None:
    record(kind=kind, actor=actor, obj=host, host_name=host.name, payload=payload)


def _transport_error(action: str, exc: TransportError) -> ValidationError:
    return ValidationError(f"{action}: {exc}", code=type(exc).__name__)


# ======================================================================================
# hosts


def host_probe_key(*, address: str, port: int) -> HostKeyInfo:
    """The key the host presents now (step 1 of adding a host; nothing is stored)."""
    try:
        return probe_host_key(address, port, KEY_PROBE_TIMEOUT)
    except TransportError as exc:
        raise _transport_error(f"Cannot read the host key of {address}:{port}", exc) from exc


def _key_line(key: HostKeyInfo) -> str:
    return f"{key.key_type} {key.base64}"


KEY_MATERIAL_ERROR = "Enter the path of the key file on the worker, not the key itself."


def looks_like_key_material(text: str) -> bool:
    """A pasted private key rather than a path (the forms check it too, so the key is
    never echoed back into a page)."""
    return "PRIVATE KEY" in text or "\n" in text.strip()


def _clean_key_file(auth: str, key_file: str) -> str:
    key_file = key_file.strip()
    if auth == Host.Auth.AGENT:
        return ""
    if looks_like_key_material(key_file):
        # Never let key material reach the database, the page or the audit log.
        raise ValidationError({"key_file": [KEY_MATERIAL_ERROR]})
    if not key_file:
        raise ValidationError({"key_file": ["A key file path is required for key-file auth."]})
    if not key_file.startswith("/"):
        raise ValidationError({"key_file": ["Use an absolute path (the worker's cwd varies)."]})
    return key_file


def host_create(
    *,
    name: str,
    address: str,
    created_by: User,
    ssh_port: int = 22,
    username: str = "root",
    transport: str = Host.Transport.SSH,
    auth: str = Host.Auth.KEY_FILE,
    key_file: str = "",
    host_key: str = "",
    confirmed_fingerprint: str = "",
) -> Host:
    """Add a host with its key pinned (step 2: the admin confirmed the fingerprint).

    For SSH, `host_key` ("type base64") is the key shown in step 1 and
    `confirmed_fingerprint` the fingerprint the admin confirmed; the host is probed again
    and must still present exactly that key, else nothing is saved.
    """
    _require(created_by, ADD_HOST, "add hosts")
    host = Host(
        name=name.strip(),
        address=address.strip(),
        ssh_port=ssh_port,
        username=username.strip(),
        transport=transport,
        auth=auth,
    )
    key: HostKeyInfo | None = None
    if transport == Host.Transport.SSH:
        host.key_file = _clean_key_file(auth, key_file)
        key = _confirmed_key(host, host_key, confirmed_fingerprint)
        now = timezone.now()
        host.presented_host_key = host.host_key = _key_line(key)
        host.presented_fingerprint = host.host_key_fingerprint = key.fingerprint_sha256
        host.host_key_confirmed_by = created_by
        host.host_key_confirmed_at = now
    else:
        host.key_file = ""
    host.full_clean()
    with transaction.atomic():
        host.save()
        _audit_host(
            "host.added",
            created_by,
            host,
            {
                "address": host.address,
                "ssh_port": host.ssh_port,
                "username": host.username,
                "transport": host.transport,
                "auth": host.auth,
            },
        )
        if key is not None:
            _audit_host(
                "host.key_pinned",
                created_by,
                host,
                {"fingerprint": key.fingerprint_sha256, "key_type": key.key_type},
            )
    return host


def _confirmed_key(host: Host, host_key: str, confirmed_fingerprint: str) -> HostKeyInfo:
    """The key to pin: parsed, matching what the admin confirmed and what the host
    presents right now (a key swapped between the two steps is refused)."""
    if not host_key or not confirmed_fingerprint:
        raise ValidationError("Read the host key first and confirm its fingerprint.")
    try:
        pkey = parse_pinned_key(host_key)
    except ValueError as exc:
        raise ValidationError(f"Not an SSH host key: {exc}") from exc
    shown = HostKeyInfo(pkey.get_name(), pkey.get_base64(), fingerprint_sha256(pkey))
    if shown.fingerprint_sha256 != confirmed_fingerprint.strip():
        raise ValidationError("The confirmed fingerprint does not belong to the key shown.")
    presented = host_probe_key(address=host.address, port=host.ssh_port)
    if presented.fingerprint_sha256 != shown.fingerprint_sha256:
        raise ValidationError(
            f"{host.address}:{host.ssh_port} now presents another host key "
            f"({presented.fingerprint_sha256}) than the one you confirmed "
            f"({shown.fingerprint_sha256}); nothing was saved. Check the host out of band."
        )
    return shown


def host_rescan_key(*, host: Host, actor: User) -> HostKeyInfo:
    """Read the key the host presents now (e.g. after a reinstall) for an admin to
    compare; the pinned key stays in force until `host_pin_key`."""
    _require(actor, CHANGE_HOST, "change hosts")
    if host.transport != Host.Transport.SSH:
        raise ValidationError("Only SSH hosts have a host key.")
    key = host_probe_key(address=host.address, port=host.ssh_port)
    with transaction.atomic():
        Host.objects.filter(pk=host.pk).update(
            presented_host_key=_key_line(key), presented_fingerprint=key.fingerprint_sha256
        )
        _audit_host(
            "host.key_presented",
            actor,
            host,
            {
                "fingerprint": key.fingerprint_sha256,
                "pinned_fingerprint": host.host_key_fingerprint,
            },
        )
    host.refresh_from_db()
    return key


def host_pin_key(*, host: Host, fingerprint: str, actor: User) -> Host:
    """Pin the presented key whose fingerprint the admin confirmed (conditional: a
    rescan in between that changed the presented key makes this refuse)."""
    _require(actor, CHANGE_HOST, "change hosts")
    previous = host.host_key_fingerprint
    with transaction.atomic():
        pinned = (
            Host.objects.filter(pk=host.pk, presented_fingerprint=fingerprint.strip())
            .exclude(presented_host_key="")
            .update(
                host_key=F("presented_host_key"),
                host_key_fingerprint=F("presented_fingerprint"),
                host_key_confirmed_by=actor,
                host_key_confirmed_at=timezone.now(),
            )
        )
        if not pinned:
            raise ValidationError(
                "The presented key changed since you looked at it (or none was read): "
                "read it again and compare the fingerprint."
            )
        _audit_host(
            "host.key_pinned",
            actor,
            host,
            {"fingerprint": fingerprint.strip(), "previous_fingerprint": previous},
        )
    host.refresh_from_db()
    return host


def _enqueue_probe(host_id: int, actor_id: int | None) -> None:
    from deploys.jobs.tasks import enqueue_probe

    enqueue_probe(host_id, actor_id)


def host_request_probe(*, host: Host, actor: User) -> None:
    """Queue a probe job (read-only on the host; operators may ask for one too)."""
    if not (actor.has_perm(CHANGE_HOST) or actor.has_perm(REQUEST_DEPLOY)):
        raise PermissionDenied("You are not allowed to probe hosts.")
    if host.archived:
        raise ValidationError(f"{host.name} is archived.")
    if host.transport == Host.Transport.SSH and not host.key_pinned:
        raise ValidationError(f"Pin the host key of {host.name} before probing it.")
    with transaction.atomic():
        transaction.on_commit(functools.partial(_enqueue_probe, host.pk, actor.pk))


def host_record_probe(*, host: Host, facts: dict[str, Any], actor: User | None) -> Host:
    """Save a probe's facts (from `deploys.probe.probe_host`); linting then targets them."""
    errors = [str(e) for e in facts.get("errors", [])]
    with transaction.atomic():
        host = Host.objects.select_for_update().get(pk=host.pk)
        host.systemd_version = facts.get("systemd_version")
        host.vllm_version = str(facts.get("vllm_version") or "")[:30]
        host.gpu_count = facts.get("gpu_count")
        host.gpus = list(facts.get("gpus") or [])
        host.managed_units = list(facts.get("managed_units") or [])
        host.probed_at = timezone.now()
        host.probe_error = "\n".join(errors)
        host.save(
            update_fields=[
                "systemd_version",
                "vllm_version",
                "gpu_count",
                "gpus",
                "managed_units",
                "probed_at",
                "probe_error",
            ]
        )
        _audit_host(
            "host.probed",
            actor,
            host,
            {
                "systemd_version": host.systemd_version,
                "vllm_version": host.vllm_version,
                "gpu_count": host.gpu_count,
                "managed_units": [u.get("name", "") for u in host.managed_units],
                "errors": errors,
            },
        )
    return host


def host_record_probe_error(*, host: Host, error: str, actor: User | None) -> Host:
    """A probe that could not connect (unreachable, key mismatch): keep the old facts,
    show why on the host page, and record it."""
    with transaction.atomic():
        Host.objects.filter(pk=host.pk).update(probe_error=error)
        _audit_host(
            "host.probe_failed",
            actor,
            host,
            {"error": error[:2000]},
        )
    host.refresh_from_db()
    return host


# ======================================================================================
# deploy requests


def approval_ttl() -> timedelta:
    return timedelta(hours=int(getattr(settings, "DEPLOY_APPROVAL_TTL_HOURS", DEFAULT_TTL_HOURS)))


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


def deploy_request_create(
    *,
    profile_version: ProfileVersion,
    host: Host,
    requested_by: User,
    unit_name: str = "",
    acknowledge_warnings: bool = False,
    preview: DeployPreview | None = None,
    now: datetime | None = None,
) -> DeployRequest:
    """Request "deploy version V to host H as unit U" (U defaults to the profile name; a
    new name keeps the old unit on the host as a fallback).

    The host's current unit is read live (before the transaction: no network I/O while
    holding the database write lock) and stored with its hash, so the job can refuse to
    overwrite a file that changed after the approver saw the diff. `preview`: that read,
    when the caller has just made it for the same version, host and unit (the request
    page shows it), so the host is not read twice. Lint errors block; warnings need
    `acknowledge_warnings`.
    """
    _require(requested_by, REQUEST_DEPLOY, "request deploys")
    unit_name = (unit_name or "").strip() or profile_version.profile.name
    try:
        validate_unit_name(unit_name)
    except ValidationError as exc:
        raise ValidationError({"unit_name": exc.messages}) from None
    _check_deployable(profile_version=profile_version, host=host)
    if preview is None:
        try:
            preview = deploy_preview(
                profile_version=profile_version, host=host, unit_name=unit_name
            )
        except TransportError as exc:
            raise _transport_error(f"Cannot read the current unit on {host.name}", exc) from exc
    elif preview.unit.unit_name != unit_name:
        raise ValueError(f"the preview is of {preview.unit.unit_name}, not {unit_name}")
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
            lint_findings=unit.findings,
            warnings_acknowledged=bool(unit.warnings) and acknowledge_warnings,
            requested_by=requested_by,
            expires_at=now + approval_ttl(),
        )
        _audit(
            "deploy.requested",
            requested_by,
            request,
            {
                "version": profile_version.number,
                "unit_name": unit_name,
                "unit_sha256": unit.sha256,
                "host_unit_sha256": preview.host_unit_sha256,
                "lint_systemd_version": unit.systemd_version,
                "lint_vllm_version": unit.vllm_version,
                "warnings": [f["code"] for f in unit.warnings],
                "expires_at": request.expires_at.isoformat(),
            },
        )
    return request


# -- validity ------------------------------------------------------------------------------


def _content_problems(request: DeployRequest) -> list[str]:
    """Why the stored unit is no longer what version V renders to (empty: still is)."""
    problems = []
    version = request.profile_version
    latest = latest_version_number(profile_id=version.profile_id)
    if latest is not None and latest > version.number:
        problems.append(
            f"profile {version.profile.name} has a newer version v{latest} than the "
            f"requested v{version.number}"
        )
    current = sha256_hex(rendered_text(profile_version=version).encode("utf-8"))
    if current != request.unit_sha256:
        problems.append(
            f"v{version.number} now renders to a different unit (sha256 {current[:12]}…, "
            f"requested {request.unit_sha256[:12]}…)"
        )
    return problems


def approval_problems(*, request: DeployRequest, now: datetime | None = None) -> list[str]:
    """Why the approved request must not run now (empty: it may).

    Approved, not expired, approved hash = stored hash, no newer profile version, and the
    version still renders to exactly the approved text. The job checks this again right
    before pushing.
    """
    now = now or timezone.now()
    problems = []
    if request.status != Status.APPROVED:
        problems.append(f"request #{request.pk} is {request.status}, not approved")
    if request.expires_at <= now:
        problems.append(f"the approval expired at {request.expires_at:%Y-%m-%d %H:%M %Z}")
    if not request.approved_sha256 or request.approved_sha256 != request.unit_sha256:
        problems.append("the approved hash is not the hash of the unit text")
    return problems + _content_problems(request)


# -- decisions -----------------------------------------------------------------------------


def _refuse_own(request: DeployRequest, user: User) -> None:
    if request.requested_by_id == user.pk:
        raise PermissionDenied(
            "You requested this deploy: someone else must decide on it (admins too)."
        )


def _expire(request: DeployRequest, now: datetime, actor: User | None = None) -> bool:
    """pending → expired if past its deadline; True if this call did it."""
    with transaction.atomic():
        done = DeployRequest.objects.filter(
            pk=request.pk, status=Status.PENDING, expires_at__lte=now
        ).update(status=Status.EXPIRED, status_reason="Not decided before it expired.")
        if done:
            _audit("deploy.expired", actor, request, {"expires_at": request.expires_at.isoformat()})
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


def _enqueue_deploy(request_id: int) -> None:
    from deploys.jobs.tasks import enqueue_deploy

    enqueue_deploy(request_id)


def deploy_request_approve(
    *,
    request: DeployRequest,
    approver: User,
    comment: str = "",
    expected_sha256: str | None = None,
    now: datetime | None = None,
) -> DeployRequest:
    """Approve: claim pending → approved (conditional UPDATE), pin the hash, re-check
    validity, enqueue the job on commit. Exactly one of any number of concurrent calls
    succeeds; the others get RequestNotPending. A request found out of date becomes void
    (ApprovalVoid). `expected_sha256`: the hash the approver's page showed.
    """
    _require(approver, APPROVE_DEPLOY, "approve deploy requests")
    _refuse_own(request, approver)
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
        )
        if claimed:
            request.refresh_from_db()
            problems = approval_problems(request=request, now=now)
            if problems:
                reason = "; ".join(problems)
                DeployRequest.objects.filter(pk=request.pk, status=Status.APPROVED).update(
                    status=Status.VOID, status_reason=reason
                )
                _audit("deploy.voided", approver, request, {"reason": reason})
            else:
                _audit(
                    "deploy.approved",
                    approver,
                    request,
                    {"approved_sha256": request.approved_sha256, "comment": comment.strip()},
                )
                transaction.on_commit(functools.partial(_enqueue_deploy, request.pk))
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
    _require(approver, APPROVE_DEPLOY, "reject deploy requests")
    _refuse_own(request, approver)
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
            status_reason="Rejected.",
        )
        if claimed:
            _audit("deploy.rejected", approver, request, {"comment": comment})
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
    "RequestNotPending",
    "approval_problems",
    "approval_ttl",
    "deploy_request_approve",
    "deploy_request_create",
    "deploy_request_reject",
    "expire_stale_requests",
    "host_create",
    "host_pin_key",
    "host_probe_key",
    "host_record_probe",
    "host_record_probe_error",
    "host_request_probe",
    "host_rescan_key",
]
