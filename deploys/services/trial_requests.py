"""Writes for trials: request one ("try X1…Xn in place of production Y on host H, compare
each with Y's baseline, put Y back"). Approving and rejecting are the deploy requests'
own (`deploys.services.deploy_requests`): the approval pins Y's text (`approved_sha256`)
and, through the job settings' hash, the plan (`deploys.trials`).

Y must be a text specadmin knows on H (`deploys.running`): the trial ends by starting Y
again, so a unit changed outside specadmin is refused, with that reason. Each candidate is
rendered and linted for the host's probed versions as a deploy request's unit is
(`deploys.selectors.unit_for_host`), without Y and the other candidates beside it: they
never run at the same time, so a port they share (VL325) or GPUs they both ask for (VL332)
is no conflict of the trial (docs/trials.md). A candidate may take Y's own unit name: it
then runs in Y's file, and the job writes Y's approved text back after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from audit.models import AuditKind
from audit.services import record
from deploys.approvals import approval_ttl
from deploys.connect import transport_for
from deploys.existing_units import ExistingUnit, existing_unit
from deploys.job_settings import job_settings, settings_sha256
from deploys.models import DeployRequest, Host, TrialCandidate
from deploys.permissions import REQUEST_DEPLOY, require
from deploys.running import record_read, version_of_text, versions_by_sha
from deploys.selectors import MAX_UNIT_BYTES, unit_for_host, unit_path
from deploys.services.hosts import transport_error
from deploys.trials import trial_plan
from deploys.unit_policy import check_unit_name, overwrite_problems
from hostops.channel import Transport, TransportError
from hostops.channel.push import sha256_hex
from units.models import ProfileVersion

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser as User

MAX_CANDIDATES = 12
ACTIVE = ("active", "activating", "reloading")


@dataclass(frozen=True)
class Candidate:
    """A candidate as asked for: a profile version, the unit name it runs as (default:
    its profile's name), and whether its unit file stays on the host at the end (None:
    the trial's default)."""

    version: ProfileVersion
    unit_name: str = ""
    keep: bool | None = None


def _check_host(host: Host) -> None:
    if host.archived:
        raise ValidationError({"host": [f"{host.name} is archived."]})
    if host.transport == Host.Transport.SSH and not host.key_pinned:
        raise ValidationError({"host": [f"The host key of {host.name} is not pinned yet."]})


@dataclass(frozen=True)
class _Production:
    unit_name: str
    text: bytes
    sha256: str
    version: ProfileVersion


def _production(host: Host, unit_name: str, transport: Transport) -> _Production:
    """Y as it is on the host now: a text specadmin knows, running."""
    data = transport.read_file(unit_path(unit_name), limit=MAX_UNIT_BYTES)
    if data is None:
        raise ValidationError(
            {
                "production_unit": [
                    f"{host.name} has no {unit_name}.service to try candidates in place of."
                ]
            }
        )
    sha = sha256_hex(data)
    version = version_of_text(sha)
    if version is None:
        raise ValidationError(
            {
                "production_unit": [
                    f"{unit_name}.service on {host.name} was changed outside specadmin (sha256 "
                    f"{sha[:12]}…, no profile version renders to it): a trial starts production "
                    "again by its known text at the end, so it must be a version specadmin "
                    "knows. Deploy or import it first."
                ]
            }
        )
    state = transport.unit_properties(f"{unit_name}.service", ("ActiveState",))
    if state.get("ActiveState") not in ACTIVE:
        raise ValidationError(
            {
                "production_unit": [
                    f"{unit_name}.service on {host.name} is "
                    f"{state.get('ActiveState') or 'unknown'}, not running: there is no "
                    "production to compare with."
                ]
            }
        )
    return _Production(unit_name, data, sha, version)


def _findings_problem(
    position: int, name: str, errors: list[dict], warnings: list[dict], ack: bool
) -> None:
    if errors:
        raise ValidationError(
            [
                f"Candidate {position} ({name}.service): lint error {f['code']} "
                f"(line {f['line']}): {f['message']}"
                for f in errors
            ],
            code="lint_errors",
        )
    if warnings and not ack:
        raise ValidationError(
            {
                "acknowledge_warnings": [
                    f"Candidate {position} ({name}.service) has {len(warnings)} lint warning(s): "
                    "read and acknowledge them."
                ]
            }
        )


def _checked_threshold(threshold: float | None) -> float | None:
    if threshold is None:
        return None
    if not (0 < float(threshold) <= 100):
        raise ValidationError({"promote_threshold": ["Between 0 and 100 (percent)."]})
    return float(threshold)


def _checked_names(asked: list[Candidate], production_unit: str) -> list[str]:
    """Each candidate's unit name (default: its profile's name): valid, not denied; no two
    the same, except production's own, which several may take (each runs in production's
    file in turn, production's text written back after it); their profiles not archived."""
    if not asked:
        raise ValidationError({"candidates": ["Pick at least one candidate version."]})
    if len(asked) > MAX_CANDIDATES:
        raise ValidationError({"candidates": [f"At most {MAX_CANDIDATES} candidates per trial."]})
    names = [c.unit_name.strip().removesuffix(".service") or c.version.profile.name for c in asked]
    for position, (c, name) in enumerate(zip(asked, names, strict=True), start=1):
        if c.version.profile.archived:
            refused = f"profile {c.version.profile.name} is archived"
            raise ValidationError({"candidates": [f"Candidate {position}: {refused}."]})
        check_unit_name(name)
    others = [n for n in names if n != production_unit]
    if len(set(others)) != len(others):
        raise ValidationError(
            {
                "candidates": [
                    "Two candidates have the same unit name (only production's own may be "
                    "shared: each runs in production's file in turn)."
                ]
            }
        )
    return names


def _candidate_row(
    host: Host,
    position: int,
    c: Candidate,
    name: str,
    present: tuple[bytes | None, ExistingUnit],
    *,
    not_beside: frozenset[str],
    keep: bool,
    acknowledge_warnings: bool,
) -> TrialCandidate:
    """The candidate rendered and linted for the host, as a row (not saved yet)."""
    current, existing = present
    foreign = overwrite_problems(host=host, unit_name=name, current=current, existing=existing)
    if foreign:
        raise ValidationError({"candidates": [f"Candidate {position}: " + "; ".join(foreign)]})
    unit = unit_for_host(
        profile_version=c.version, host=host, unit_name=name, not_beside=not_beside
    )
    if unit.size > MAX_UNIT_BYTES:
        raise ValidationError(
            f"Candidate {position}: the unit is larger than {MAX_UNIT_BYTES} bytes."
        )
    _findings_problem(position, name, unit.errors, unit.warnings, acknowledge_warnings)
    return TrialCandidate(
        position=position,
        profile_version=c.version,
        unit_name=name,
        unit_text=unit.text,
        unit_sha256=unit.sha256,
        host_unit_sha256="" if current is None else sha256_hex(current),
        lint_findings=unit.findings,
        keep=keep,
    )


def trial_request_create(
    *,
    host: Host,
    candidates: Sequence[Candidate | ProfileVersion],
    requested_by: User,
    production_unit: str,
    promote_threshold: float | None = None,
    keep: bool = False,
    acknowledge_warnings: bool = False,
    now: datetime | None = None,
) -> DeployRequest:
    """Request a trial of `candidates`, in this order, in place of `production_unit` on
    `host`. The host is read live (before the transaction): Y's text and state, and each
    candidate's unit name there (a foreign file under it needs an admin's adoption, as for
    a deploy). `promote_threshold`: the approver may let the best candidate stay as
    production when it beats Y by at least this many percent on every gated metric."""
    require(requested_by, REQUEST_DEPLOY, "request trials")
    _check_host(host)
    production_unit = production_unit.strip().removesuffix(".service")
    check_unit_name(production_unit)
    asked = [c if isinstance(c, Candidate) else Candidate(c) for c in candidates]
    promote_threshold = _checked_threshold(promote_threshold)
    names = _checked_names(asked, production_unit)
    try:
        with transport_for(host) as transport:
            production = _production(host, production_unit, transport)
            present = {
                name: (
                    transport.read_file(unit_path(name), limit=MAX_UNIT_BYTES),
                    existing_unit(transport, name),
                )
                for name in dict.fromkeys(names)
            }
    except TransportError as exc:
        raise transport_error(f"Cannot read the units on {host.name}", exc) from exc
    others = frozenset({production_unit, *names})
    rows = [
        _candidate_row(
            host,
            position,
            c,
            name,
            present[name],
            not_beside=others - {name},
            # production's own file is never kept as the candidate's: its text comes back
            keep=(keep if c.keep is None else c.keep) and name != production_unit,
            acknowledge_warnings=acknowledge_warnings,
        )
        for position, (c, name) in enumerate(zip(asked, names, strict=True), start=1)
    ]
    plan = trial_plan(
        production_unit=production_unit,
        production_sha256=production.sha256,
        candidates=rows,
        promote_pct=promote_threshold,
    )
    settings = job_settings(profile_version=production.version) | {"trial": plan}
    now = now or timezone.now()
    text = production.text.decode("utf-8", errors="replace").replace("\0", "\ufffd")
    with transaction.atomic():
        request = DeployRequest.objects.create(
            kind=DeployRequest.Kind.TRIAL,
            profile_version=production.version,
            host=host,
            unit_name=production_unit,
            unit_text=text,
            unit_sha256=production.sha256,
            host_unit_text=text,
            host_unit_sha256=production.sha256,
            lint_findings=[],
            job_settings=settings,
            job_settings_sha256=settings_sha256(settings),
            warnings_acknowledged=acknowledge_warnings and any(r.lint_findings for r in rows),
            requested_by=requested_by,
            expires_at=now + approval_ttl(),
            trial_promote_pct=promote_threshold,
        )
        for row in rows:
            row.request = request
        TrialCandidate.objects.bulk_create(rows)
        record_read(
            host=host,
            unit_name=production_unit,
            data=production.text,
            step="request",
            request=request,
        )
        versions = versions_by_sha([production.sha256]).get(production.sha256, ())
        record(
            kind=AuditKind.DEPLOY_REQUESTED,
            actor=requested_by,
            obj=request,
            host_name=host.name,
            profile_name=production.version.profile.name,
            payload={
                "request": request.pk,
                "kind": DeployRequest.Kind.TRIAL,
                "production": {
                    "unit": f"{production_unit}.service",
                    "sha256": production.sha256,
                    "versions": [str(v) for v in versions],
                },
                "plan": plan,
                "job_settings_sha256": request.job_settings_sha256,
                "warnings": {str(r.position): [f["code"] for f in r.lint_findings] for r in rows},
                "expires_at": request.expires_at.isoformat(),
            },
        )
    return request


__all__ = ["MAX_CANDIDATES", "Candidate", "trial_request_create"]
