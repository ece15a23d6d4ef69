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
from deploys.running import versions_by_sha
from deploys.selectors import latest_version_number, rendered_text, sha256_hex
from units.models import ProfileVersion

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
    if request.decided_by_id is not None:
        # A row written around the services (an older release, a database edit) is held to
        # the same four-eyes rule as a decision made today.
        refusal = decision_refusal(request, request.decided_by)
        if refusal:
            problems.append(f"approved by {request.decided_by}, who may not: {refusal}")
    # A restart, rollback or removal names an exact text on the host (or an earlier push),
    # not what a profile version renders to now: only a deploy is held to the profile.
    if request.kind != DeployRequest.Kind.DEPLOY:
        return problems
    return problems + content_problems(request)


def running_version_number(request: DeployRequest) -> int | None:
    """The number of the request's profile version that the host ran under the request's
    unit name when it was requested (the text read then, named by `deploys.running`: the
    newest version of this profile that text is), or None: the host had none of this
    profile's versions there, so every version is new to the host."""
    versions = versions_by_sha([request.host_unit_sha256]).get(request.host_unit_sha256, ())
    mine = [v.number for v in versions if v.profile_id == request.profile_version.profile_id]
    return max(mine, default=None)


def change_authors(request: DeployRequest) -> dict[int, list[int]]:
    """{user id: version numbers} of everyone who saved a version of the profile after
    the one running on the host, up to the requested one: the changes this deploy brings.
    A restart, rollback or removal brings no new change (nothing here)."""
    if request.kind != DeployRequest.Kind.DEPLOY:
        return {}
    since = running_version_number(request)
    versions = ProfileVersion.objects.filter(
        profile_id=request.profile_version.profile_id,
        number__lte=request.profile_version.number,
        created_by__isnull=False,
    )
    if since is not None:
        versions = versions.filter(number__gt=since)
    authors: dict[int, list[int]] = {}
    for user_id, number in versions.order_by("number").values_list("created_by_id", "number"):
        authors.setdefault(user_id, []).append(number)
    return authors


def decision_refusal(request: DeployRequest, user: User) -> str | None:
    """Why `user` may not decide on `request` (four eyes), or None.

    Neither the requester nor an author of any change the deploy brings to the host (a
    version saved since the one running there) decides: otherwise one person writes a
    change and approves it as soon as anyone else clicks "request". Admins too.
    """
    if request.requested_by_id == user.pk:
        return "You requested this deploy: someone else must decide on it (admins too)."
    numbers = change_authors(request).get(user.pk)
    if numbers:
        shown = ", ".join(f"v{n}" for n in numbers)
        return (
            f"You wrote {shown} of {request.profile_version.profile.name}, which this deploy "
            "brings to the host: someone who did not write the change must decide (admins "
            "too)."
        )
    return None


def refuse_own_decision(request: DeployRequest, user: User) -> None:
    """PermissionDenied when `user` may not decide on `request` (`decision_refusal`)."""
    refusal = decision_refusal(request, user)
    if refusal:
        raise PermissionDenied(refusal)


__all__ = [
    "DEFAULT_TTL_HOURS",
    "approval_problems",
    "approval_ttl",
    "change_authors",
    "content_problems",
    "decision_refusal",
    "refuse_own_decision",
    "running_version_number",
]
