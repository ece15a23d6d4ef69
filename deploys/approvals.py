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

from deploys.job_settings import changed_labels, job_settings, settings_sha256
from deploys.models import DeployRequest
from deploys.running import versions_by_sha
from deploys.selectors import latest_version_number, rendered_text, sha256_hex
from deploys.trials import plan_of, plan_problems
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


def settings_problems(request: DeployRequest) -> list[str]:
    """Why the job settings are not the approved ones (empty: they are). The approval
    pins the hash of the settings stored with the request; those are recomputed from the
    version and the profile's benchmark policy, so a policy changed after the approval
    (or a row edited around the services) voids it (`deploys.job_settings`)."""
    if not request.job_settings_sha256:
        return [
            "the request was made before its job settings were part of an approval: "
            "request it again"
        ]
    problems = []
    if request.approved_settings_sha256 != request.job_settings_sha256:
        problems.append("the approved job settings are not the request's job settings")
    if settings_sha256(request.job_settings) != request.job_settings_sha256:
        problems.append("the stored job settings do not match their hash")
    now = job_settings(profile_version=request.profile_version)
    if request.kind == DeployRequest.Kind.TRIAL:  # the trial's plan is approved with them
        now = now | {"trial": plan_of(request)}
    if settings_sha256(now) != request.job_settings_sha256:
        changes = "; ".join(changed_labels(request.job_settings, now)) or "their hash differs"
        problems.append(f"the job settings changed since the request ({changes})")
    return problems


def approval_problems(*, request: DeployRequest, now: datetime | None = None) -> list[str]:
    """Why the approved request must not run now (empty: it may).

    Approved, not expired, approved hash = stored hash, the approved job settings = the
    stored ones = the ones the version and its benchmark policy give now, no newer profile
    version, and the version still renders to exactly the approved text. The job checks
    this again right before pushing.
    """
    now = now or timezone.now()
    problems = []
    if request.status != Status.APPROVED:
        problems.append(f"request #{request.pk} is {request.status}, not approved")
    if request.expires_at <= now:
        problems.append(f"the approval expired at {request.expires_at:%Y-%m-%d %H:%M %Z}")
    if not request.approved_sha256 or request.approved_sha256 != request.unit_sha256:
        problems.append("the approved hash is not the hash of the unit text")
    problems += settings_problems(request)
    if request.decided_by_id is not None:
        # A row written around the services (an older release, a database edit) is held to
        # the same four-eyes rule as a decision made today.
        refusal = decision_refusal(request, request.decided_by)
        if refusal:
            problems.append(f"approved by {request.decided_by}, who may not: {refusal}")
    if request.kind == DeployRequest.Kind.TRIAL:
        problems += plan_problems(request)
    # A restart, rollback or removal names an exact text on the host (or an earlier push),
    # not what a profile version renders to now; a trial names exact texts too: only a
    # deploy is held to the profile.
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


def _versions_brought(request: DeployRequest) -> list[ProfileVersion]:
    """The profile's versions saved after the one running on the host, up to the
    requested one (all of them on a host that never ran the profile): the changes this
    deploy brings. A restart, rollback or removal brings no new change (none)."""
    if request.kind == DeployRequest.Kind.TRIAL:
        # Every candidate is a change the trial brings to the host (for a while, or for
        # good when promoted): its authors do not approve it.
        return sorted(
            {c.profile_version for c in request.candidates.select_related("profile_version")},
            key=lambda v: (v.profile_id, v.number),
        )
    if request.kind != DeployRequest.Kind.DEPLOY:
        return []
    since = running_version_number(request)
    versions = ProfileVersion.objects.filter(
        profile_id=request.profile_version.profile_id,
        number__lte=request.profile_version.number,
    )
    if since is not None:
        versions = versions.filter(number__gt=since)
    return list(
        versions.select_related("copied_from__profile")
        .only(
            "number",
            "created_by_id",
            "authors",
            "copied_from__number",
            "copied_from__profile__name",
            "profile_id",
        )
        .order_by("number")
    )


def change_authors(request: DeployRequest) -> dict[int, list[int]]:
    """{user id: version numbers} of everyone who wrote a change this deploy brings to
    the host: the author of each version saved since the one running there, and, for a
    version that copies another (a restore, a clone), everyone who wrote the copied
    settings (`ProfileVersion.brought_by`)."""
    authors: dict[int, list[int]] = {}
    for version in _versions_brought(request):
        for user_id in sorted(version.brought_by):
            authors.setdefault(user_id, []).append(version.number)
    return authors


def _authorship(version: ProfileVersion, user_id: int) -> str:
    """ "v2", or "part of v4 (copied from v2)" when the user wrote only the copied text."""
    source = version.copied_from
    if source is None or version.created_by_id == user_id:
        return f"v{version.number}"
    where = (
        f"v{source.number}"
        if source.profile_id == version.profile_id
        else f"{source.profile.name} v{source.number}"
    )
    return f"part of v{version.number} (copied from {where})"


def decision_refusal(request: DeployRequest, user: User) -> str | None:
    """Why `user` may not decide on `request` (four eyes), or None.

    Neither the requester nor an author of any change the deploy brings to the host (a
    version saved since the one running there, with the authors of whatever a restore or
    clone copied) decides: otherwise one person writes a change and approves it as soon as
    anyone else clicks "request" — or copies it. Admins too.
    """
    if request.requested_by_id == user.pk:
        return "You requested this deploy: someone else must decide on it (admins too)."
    mine = [v for v in _versions_brought(request) if user.pk in v.brought_by]
    if mine:
        shown = ", ".join(_authorship(v, user.pk) for v in mine)
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
    "settings_problems",
]
