"""Reads of profiles and versions (HackSoft style: keyword-only where it filters)."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet

from units.models import PROFILE_FIELDS, ProfileVersion, ServiceProfile
from units.profile_data import normalize_profile_data
from units.unicode_text import split_lines_keepends

NO_METHOD = "none"  # `method=` filter value for profiles without speculative decoding


def profile_list(
    *,
    search: str = "",
    method: str = "",
    vllm_version: str = "",
    host: str = "",
    archived: bool | None = False,
) -> QuerySet[ServiceProfile]:
    """Profiles by name, filtered. `search` matches name, description and model;
    `method=""` any, `"none"` without speculative decoding; `host` a host name some
    version was successfully deployed to; `archived=None` both."""
    qs = ServiceProfile.objects.all()
    if archived is not None:
        qs = qs.filter(archived=archived)
    search = search.strip()
    if search:
        qs = qs.filter(
            Q(name__icontains=search)
            | Q(description__icontains=search)
            | Q(model__icontains=search)
        )
    if method == NO_METHOD:
        qs = qs.filter(spec_method="")
    elif method:
        qs = qs.filter(spec_method=method)
    if vllm_version:
        qs = qs.filter(target_vllm_version=vllm_version)
    if host:
        # Deploys point at profile versions (deploys depends on units, not the reverse),
        # so this is a lookup through the reverse relation, not an import.
        deployed = ProfileVersion.objects.filter(
            deploy_requests__host__name=host, deploy_requests__status="succeeded"
        ).values("profile_id")
        qs = qs.filter(pk__in=deployed)
    return qs.order_by("name")


def deploy_host_names() -> list[str]:
    """Names of hosts that received some deploy (choices for the list's host filter)."""
    return list(
        ProfileVersion.objects.filter(deploy_requests__status="succeeded")
        .values_list("deploy_requests__host__name", flat=True)
        .distinct()
        .order_by("deploy_requests__host__name")
    )


def profile_versions(*, profile: ServiceProfile) -> QuerySet[ProfileVersion]:
    """Newest first, with the author loaded (history pages list them all)."""
    return (
        ProfileVersion.objects.filter(profile=profile)
        .select_related("created_by")
        .order_by("-number")
    )


def profile_latest_version(*, profile: ServiceProfile) -> ProfileVersion | None:
    return ProfileVersion.objects.filter(profile=profile).order_by("-number").first()


def _setting_keys(*versions: ProfileVersion) -> list[str]:
    """The profile's fields in model order, then keys only older snapshots have (sorted):
    never the stored order, which PostgreSQL's jsonb does not keep."""
    stored = set().union(*(v.data for v in versions))
    return [f for f in PROFILE_FIELDS if f in stored] + sorted(stored - set(PROFILE_FIELDS))


def version_author_names(version: ProfileVersion) -> list[str]:
    """The usernames of everyone who wrote any part of the version's settings."""
    users = get_user_model().objects.filter(pk__in=version.authors)
    return sorted(user.get_username() for user in users)


def version_settings(version: ProfileVersion) -> list[tuple[str, Any]]:
    """(field, value) of a version's snapshot, in field order."""
    return [(k, version.data[k]) for k in _setting_keys(version)]


def version_field_diff(a: ProfileVersion, b: ProfileVersion) -> list[tuple[str, Any, Any]]:
    """(field, value in a, value in b) for every setting that differs, in field order."""
    keys = _setting_keys(a, b)
    # A setting added after a version was saved reads as its default there ("" not None).
    old, new = normalize_profile_data(a.data), normalize_profile_data(b.data)
    return [(k, old.get(k), new.get(k)) for k in keys if old.get(k) != new.get(k)]


def version_unit_diff(
    a: ProfileVersion, b: ProfileVersion, shown: Callable[[str], str] = str
) -> str:
    """Unified diff of the two rendered units ("" when identical); `shown` turns each
    unit into what the reader may see (`units.masking.mask_text` for viewers)."""
    return "".join(
        difflib.unified_diff(
            split_lines_keepends(shown(a.unit_text)),
            split_lines_keepends(shown(b.unit_text)),
            fromfile=f"{a.profile.name}.service@v{a.number}",
            tofile=f"{b.profile.name}.service@v{b.number}",
        )
    )
