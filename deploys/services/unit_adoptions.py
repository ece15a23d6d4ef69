"""Adopting a unit file specadmin did not write, so a deploy may replace it.

Only an admin adopts, with a reason, and the adoption covers the exact files read live now
(their sha256): the file in /etc/systemd/system a deploy would overwrite, and every other
file systemd loads under the name (a vendor unit in /lib/systemd/system the deploy would
shadow, drop-ins), together. If one changes afterwards, it is foreign again. The deny list
(`deploys.unit_policy.DENIED_UNIT_PATTERNS`) cannot be adopted away.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from audit.models import AuditKind
from audit.services import record
from deploys import existing_units, selectors
from deploys.existing_units import ExistingUnit
from deploys.models import Host, UnitAdoption
from deploys.permissions import ADOPT_UNIT, require
from deploys.services.hosts import transport_error
from deploys.unit_policy import adoption_for, check_unit_name, is_managed
from hostops.channel import TransportError
from hostops.channel.push import sha256_hex

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser as User


def _adoptable(host: Host, unit_name: str) -> tuple[bytes | None, ExistingUnit]:
    """The host's file in /etc/systemd/system (None: absent) and what systemd loads."""
    try:
        current = selectors.read_host_unit(host=host, unit_name=unit_name)
        existing = existing_units.read_existing_unit(host=host, unit_name=unit_name)
    except TransportError as exc:
        raise transport_error(f"Cannot read {unit_name}.service on {host.name}", exc) from exc
    return current, existing


def _subjects(
    host: Host, unit_name: str, current: bytes | None, existing: ExistingUnit
) -> list[tuple[str, dict[str, Any]]]:
    """(sha256, audit payload) of each thing to adopt: the foreign file specadmin would
    overwrite, and the other files systemd loads under the name (adopted together)."""
    subjects = []
    if current is not None and not is_managed(current):
        subjects.append((sha256_hex(current), {"path": existing.own_path, "size": len(current)}))
    if existing.others:
        files = [{"path": f.path, "kind": f.kind, "sha256": f.sha256} for f in existing.others]
        subjects.append((existing.fingerprint, {"loaded_from": files}))
    if not subjects:
        if current is None:
            reason = f"{host.name} has no {unit_name}.service: there is nothing to adopt."
        else:
            reason = f"{unit_name}.service on {host.name} is already specadmin's."
        raise ValidationError({"unit_name": [reason]})
    return subjects


def _adopt_one(
    host: Host, unit_name: str, sha: str, payload: dict[str, Any], actor: User, comment: str
) -> UnitAdoption:
    existing = adoption_for(host=host, unit_name=unit_name, sha256=sha)
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            adoption = UnitAdoption.objects.create(
                host=host, unit_name=unit_name, sha256=sha, adopted_by=actor, comment=comment
            )
            record(
                kind=AuditKind.UNIT_ADOPTED,
                actor=actor,
                obj=adoption,
                host_name=host.name,
                payload={
                    "unit": f"{unit_name}.service",
                    "sha256": sha,
                    **payload,
                    "comment": comment[:2000],
                },
            )
    except IntegrityError:  # the same file adopted concurrently: one adoption stands
        found = adoption_for(host=host, unit_name=unit_name, sha256=sha)
        if found is None:
            raise
        return found
    return adoption


def unit_adopt(*, host: Host, unit_name: str, actor: User, comment: str) -> UnitAdoption:
    """Record that `actor` (an admin) lets specadmin write `<unit_name>.service` over what
    the host has under that name now, read live: its foreign file in /etc/systemd/system
    and every other file systemd loads for it (a vendor unit the push would shadow,
    drop-ins; `deploys.existing_units`). Audited with their sha256; returns the last
    adoption recorded."""
    require(actor, ADOPT_UNIT, "adopt unit files")
    unit_name = unit_name.strip()
    comment = comment.strip()
    check_unit_name(unit_name)
    if not comment:
        raise ValidationError({"comment": ["Say why specadmin may replace this unit."]})
    current, existing = _adoptable(host, unit_name)
    adoptions = [
        _adopt_one(host, unit_name, sha, payload, actor, comment)
        for sha, payload in _subjects(host, unit_name, current, existing)
    ]
    return adoptions[-1]


__all__ = ["unit_adopt"]
