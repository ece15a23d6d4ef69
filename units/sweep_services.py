"""Writes of a sweep: its accepted points saved as versions of a new clone of the profile
(`units.services.profile_clone`, then one `profile_update` per point), so every candidate a
trial runs is an ordinary, immutable, audited version with its authors recorded."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from units.models import ProfileVersion, ServiceProfile
from units.services import profile_clone, profile_update
from units.sweeps import SweepPlan


def sweep_create_candidates(
    *,
    version: ProfileVersion,
    plan: SweepPlan,
    clone_name: str,
    created_by: Any,
) -> tuple[ServiceProfile, list[ProfileVersion]]:
    """Clone `version`'s profile as `clone_name` and save each accepted point of `plan` as
    its next version, in the plan's order; all or nothing. ValidationError (the clone's
    name taken, a point no longer valid) leaves nothing behind."""
    accepted = plan.accepted
    if not accepted:
        raise ValidationError("No point of this sweep is accepted: nothing to create.")
    with transaction.atomic():
        clone = profile_clone(profile=version.profile, new_name=clone_name, created_by=created_by)
        created: list[ProfileVersion] = []
        for point in accepted:
            saved = profile_update(
                profile=clone,
                data={**point.data, "name": clone_name},
                updated_by=created_by,
                comment=(
                    f"Sweep of {version.profile.name} v{version.number}, point {point.index}: "
                    f"{point.label}"
                ),
            )
            if saved is not None:
                created.append(saved)
    return clone, created


__all__ = ["sweep_create_candidates"]
