"""The approval rules, read-only: may this approved request run now, may this person
decide on it. Services (deciding) and job steps (re-checking right before the host is
touched) both ask here, so the rules live in one place and import nothing that writes.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from deploys.models import DeployRequest
from deploys.selectors import latest_version_number, rendered_text, sha256_hex

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser as User

DEFAULT_TTL_HOURS = 24
Status = DeployRequest.Status


def approval_ttl() -> timedelta:
    """How long a request waits for a decision, and an approval stays valid."""
    return timedelta(hours=int(getattr(settings, "DEPLOY_APPROVAL_TTL_HOURS", DEFAULT_TTL_HOURS)))


def content_problems(request: DeployRequest) -> list[str]:
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
    return problems + content_problems(request)


def refuse_own_decision(request: DeployRequest, user: User) -> None:
    """PermissionDenied when `user` requested `request`: someone else decides (admins too)."""
    if request.requested_by_id == user.pk:
        raise PermissionDenied(
            "You requested this deploy: someone else must decide on it (admins too)."
        )


__all__ = [
    "DEFAULT_TTL_HOURS",
    "approval_problems",
    "approval_ttl",
    "content_problems",
    "refuse_own_decision",
]
