"""Writes to profiles (HackSoft style: keyword-only, atomic, validated here).

Every change of settings appends an immutable `ProfileVersion` with the data snapshot,
the unit it renders to and its sha256, so "what ran, and who changed it" always has an
answer; archiving hides a profile but never deletes its history. Views, admin actions
and commands call these functions instead of saving models themselves.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from audit.models import AuditKind
from audit.services import record
from units.models import PROFILE_FIELDS, ProfileVersion, ServiceProfile
from units.profile_data import model_values, normalize_profile_data, profile_data
from units.rendering import render_unit
from units.selectors import profile_latest_version
from units.validation import clean_profile_data

User = AbstractBaseUser


def changed_fields(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Settings that differ, in the order of the profile's fields."""
    return [f for f in PROFILE_FIELDS if old.get(f) != new.get(f)]


def version_authors(*, base: ProfileVersion | None, created_by: User | None) -> list[int]:
    """Everyone who wrote any part of a new version's settings: those of `base` (the
    version it edits, or the one it copies) and its own author. Authorship follows
    content, so a restore or a clone carries the authors of the text it copies and the
    four-eyes rule (`deploys.approvals`) keeps them from approving it."""
    authors = set(base.authors) if base is not None else set()
    if created_by is not None and created_by.pk is not None:
        authors.add(created_by.pk)
    return sorted(authors)


def _append_version(
    *,
    profile: ServiceProfile,
    data: dict[str, Any],
    changed: Iterable[str],
    created_by: User | None,
    comment: str,
    copied_from: ProfileVersion | None = None,
) -> ProfileVersion:
    latest = profile_latest_version(profile=profile)
    unit_text = render_unit(data)
    return ProfileVersion.objects.create(
        profile=profile,
        number=(latest.number + 1) if latest else 1,
        data=data,
        unit_text=unit_text,
        unit_sha256=hashlib.sha256(unit_text.encode("utf-8")).hexdigest(),
        changed_fields=list(changed),
        comment=comment[:500],
        created_by=created_by,
        copied_from=copied_from,
        authors=version_authors(base=copied_from or latest, created_by=created_by),
    )


def _audit(kind: str, actor: User | None, profile: ServiceProfile, payload: dict) -> None:
    """One audit event inside the caller's transaction (rolled back with the change).
    Payloads carry version numbers and field names only, never values: extra arguments
    and environment values may hold secrets (`--api-key`)."""
    record(kind=kind, actor=actor, obj=profile, payload=payload, profile_name=profile.name)


def _name_taken(name: str) -> ValidationError:
    return ValidationError({"name": [f"A profile named “{name}” already exists."]})


def _check_name_free(name: str) -> None:
    if ServiceProfile.objects.filter(name=name).exists():
        raise _name_taken(name)


def _insert_profile(
    data: dict[str, Any], *, cloned_from: ServiceProfile | None = None
) -> ServiceProfile:
    """Insert a new profile row. The check only answers for committed rows: a concurrent
    create of the same name that commits first makes the unique index refuse ours (on
    PostgreSQL), and that is the same "already exists" for the user, not a server error."""
    _check_name_free(data["name"])
    try:
        with transaction.atomic():  # a savepoint: the caller's transaction stays usable
            return ServiceProfile.objects.create(**model_values(data), cloned_from=cloned_from)
    except IntegrityError:
        if ServiceProfile.objects.filter(name=data["name"]).exists():
            raise _name_taken(data["name"]) from None
        raise


def _locked(profile: ServiceProfile) -> ServiceProfile:
    """Re-read the row under a write lock so concurrent saves get distinct numbers
    (PostgreSQL row lock; SQLite's IMMEDIATE transactions serialise writers anyway)."""
    return ServiceProfile.objects.select_for_update().get(pk=profile.pk)


def profile_create(
    *, data: dict[str, Any], created_by: User | None, comment: str = ""
) -> ServiceProfile:
    """Validate (fields, then the rendered unit's lint errors) and create the profile
    with version 1."""
    clean = clean_profile_data(data)
    with transaction.atomic():
        profile = _insert_profile(clean)
        version = _append_version(
            profile=profile,
            data=clean,
            changed=PROFILE_FIELDS,
            created_by=created_by,
            comment=comment or "Created",
        )
        _audit(AuditKind.PROFILE_CREATED, created_by, profile, {"version": version.number})
    return profile


def _save_settings(
    *,
    profile: ServiceProfile,
    data: dict[str, Any],
    user: User | None,
    comment: str,
    copied_from: ProfileVersion | None = None,
) -> ProfileVersion | None:
    """Apply canonical, valid data; None when nothing differs from the current settings.
    `copied_from`: the version these settings are a copy of (a restore)."""
    if profile.archived:
        raise ValidationError(
            f"“{profile.name}” is archived: restore it from the archive before changing it."
        )
    current = profile_data(profile)
    if data["name"] != profile.name:
        raise ValidationError(
            {
                "name": [
                    "A profile cannot be renamed: the unit name is how hosts and history know "
                    "it. Clone it under the new name instead."
                ]
            }
        )
    changed = changed_fields(current, data)
    if not changed:
        return None
    for field, value in model_values(data).items():
        setattr(profile, field, value)
    profile.save()
    return _append_version(
        profile=profile,
        data=data,
        changed=changed,
        created_by=user,
        comment=comment,
        copied_from=copied_from,
    )


class StaleEdit(ValidationError):
    """The edit started from an older version than the profile has now: saving it would
    silently undo the other person's change. Nothing was saved."""

    def __init__(self, base: ProfileVersion, latest: ProfileVersion) -> None:
        who = latest.created_by.get_username() if latest.created_by else "someone"
        super().__init__(
            f"{who} saved version {latest.number} since you opened this form (version "
            f"{base.number}). Nothing was saved: their change is shown below; apply yours "
            "on top of it and save again.",
            code="stale",
        )
        self.base = base
        self.latest = latest


def profile_update(
    *,
    profile: ServiceProfile,
    data: dict[str, Any],
    updated_by: User | None,
    comment: str = "",
    base_version: int | None = None,
) -> ProfileVersion | None:
    """Save new settings as a new version; None (no version) when nothing changed.

    `data` may be partial: missing settings keep their current values. `base_version`:
    the version the editor started from (the edit form carries it); a newer one saved
    meanwhile refuses the save with StaleEdit (checked under the profile's row lock)."""
    merged = profile_data(profile) | normalize_profile_data(data, fill_defaults=False)
    clean = clean_profile_data(merged)
    with transaction.atomic():
        profile = _locked(profile)
        latest = profile_latest_version(profile=profile)
        if base_version is not None and latest is not None and latest.number != base_version:
            base = ProfileVersion.objects.filter(profile=profile, number=base_version).first()
            raise StaleEdit(base or latest, latest)
        version = _save_settings(profile=profile, data=clean, user=updated_by, comment=comment)
        if version is not None:
            _audit(
                AuditKind.PROFILE_EDITED,
                updated_by,
                profile,
                {"version": version.number, "changed_fields": version.changed_fields},
            )
    return version


def profile_clone(
    *, profile: ServiceProfile, new_name: str, created_by: User | None
) -> ServiceProfile:
    """A variant beside the original (which stays as the fallback), with the original's
    current settings under `new_name`; version 1 records where it came from."""
    source_version = profile_latest_version(profile=profile)
    data = profile_data(profile) | {"name": new_name}
    clean = clean_profile_data(data)
    with transaction.atomic():
        clone = _insert_profile(clean, cloned_from=profile)
        where = f"{profile.name} v{source_version.number}" if source_version else profile.name
        version = _append_version(
            profile=clone,
            data=clean,
            changed=["name"],
            created_by=created_by,
            comment=f"Cloned from {where}",
            copied_from=source_version,
        )
        _audit(
            AuditKind.PROFILE_CREATED,
            created_by,
            clone,
            {"version": version.number, "cloned_from": profile.name},
        )
    return clone


def _set_archived(
    profile: ServiceProfile, *, archived: bool, user: User | None, kind: AuditKind
) -> ServiceProfile:
    with transaction.atomic():
        profile = _locked(profile)
        if profile.archived != archived:
            profile.archived = archived
            profile.save(update_fields=["archived", "updated_at"])
            _audit(kind, user, profile, {})
    return profile


def profile_archive(*, profile: ServiceProfile, archived_by: User | None) -> ServiceProfile:
    """Hide the profile from lists and editing; its versions stay. Idempotent."""
    return _set_archived(profile, archived=True, user=archived_by, kind=AuditKind.PROFILE_ARCHIVED)


def profile_unarchive(*, profile: ServiceProfile, unarchived_by: User | None) -> ServiceProfile:
    """Bring an archived profile back (the undo of `profile_archive`). Idempotent."""
    return _set_archived(
        profile, archived=False, user=unarchived_by, kind=AuditKind.PROFILE_UNARCHIVED
    )


def profile_restore_version(*, version: ProfileVersion, restored_by: User | None) -> ProfileVersion:
    """Make an old version's settings current again as a NEW version (history only grows).

    The old settings are validated again against today's rules and catalogs. When they
    equal the current settings already, nothing is written and the latest version is
    returned."""
    profile = version.profile
    clean = clean_profile_data(dict(version.data))
    with transaction.atomic():
        profile = _locked(profile)
        new = _save_settings(
            profile=profile,
            data=clean,
            user=restored_by,
            comment=f"Restored v{version.number}",
            copied_from=version,
        )
        if new is None:
            latest = profile_latest_version(profile=profile)
            assert latest is not None
            return latest
        _audit(
            AuditKind.PROFILE_RESTORED,
            restored_by,
            profile,
            {"version": new.number, "restored": version.number},
        )
    return new
