"""The one place a sweep hands its candidates to a trial.

A trial (try X1…Xn in place of production on a host, each gated against production's
baseline, production put back; docs/trials.md) is a deploy request made by
`deploys.services.trial_requests.trial_request_create`. A sweep's candidates are versions
of one cloned profile, so each runs under a unit name of its own (`<clone>-v<N>`), in
place of the unit the sweep started from."""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.models import User

from deploys.models import DeployRequest, Host
from deploys.services.trial_requests import Candidate, trial_request_create
from units.models import ProfileVersion


def candidate_unit_name(version: ProfileVersion) -> str:
    """The unit a sweep's candidate runs as: its profile's name and its version number."""
    return f"{version.profile.name}-v{version.number}"


def send_as_trial(
    *,
    host: Host,
    production: ProfileVersion,
    versions: Sequence[ProfileVersion],
    requested_by: User,
) -> DeployRequest:
    """The trial request for `versions` on `host` in their order, in place of the unit of
    `production`'s profile (ValidationError, as the trial service says, when it cannot be)."""
    return trial_request_create(
        host=host,
        candidates=[Candidate(v, unit_name=candidate_unit_name(v)) for v in versions],
        requested_by=requested_by,
        production_unit=production.profile.name,
    )


__all__ = ["candidate_unit_name", "send_as_trial"]
