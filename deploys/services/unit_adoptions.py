"""Adopting a unit file specadmin did not write, so a deploy may replace it.

Only an admin adopts, with a reason, and the adoption covers the exact file read live now
(its sha256): if the file changes afterwards, it is foreign again. The deny list
(`deploys.unit_policy.DENIED_UNIT_PATTERNS`) cannot be adopted away.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from audit.models import AuditKind
from audit.services import record
from deploys import selectors
from deploys.models import Host, UnitAdoption
from deploys.permissions import ADOPT_UNIT, require
from deploys.services.hosts import transport_error
from deploys.transports import TransportError
from deploys.transports.push import sha256_hex
from deploys.unit_policy import adoption_for, check_unit_name, is_managed

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser as User


def unit_adopt(*, host: Host, unit_name: str, actor: User, comment: str) -> UnitAdoption:
    """Record that `actor` (an admin) lets specadmin overwrite the host's current
    `<unit_name>.service`, read live now; audited with the file's sha256."""
    require(actor, ADOPT_UNIT, "adopt unit files")
    unit_name = unit_name.strip()
    comment = comment.strip()
    check_unit_name(unit_name)
    if not comment:
        raise ValidationError({"comment": ["Say why specadmin may replace this unit."]})
    try:
        current = selectors.read_host_unit(host=host, unit_name=unit_name)
    except TransportError as exc:
        raise transport_error(f"Cannot read {unit_name}.service on {host.name}", exc) from exc
    if current is None:
        raise ValidationError(
            {"unit_name": [f"{host.name} has no {unit_name}.service: there is nothing to adopt."]}
        )
    if is_managed(current):
        raise ValidationError(
            {"unit_name": [f"{unit_name}.service on {host.name} is already specadmin's."]}
        )
    sha = sha256_hex(current)
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
                    "size": len(current),
                    "comment": comment[:2000],
                },
            )
    except IntegrityError:  # the same file adopted concurrently: one adoption stands
        found = adoption_for(host=host, unit_name=unit_name, sha256=sha)
        if found is None:
            raise
        return found
    return adoption


__all__ = ["unit_adopt"]
