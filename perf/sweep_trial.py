"""The one place a sweep hands its candidates to a trial.

A trial (try X1…Xn in place of production on a host, each gated against production's
baseline, production put back) is a deploy request made by
`deploys.services.trials.trial_request_create`. Where this installation has that service
the sweep's candidates are sent as one trial request, waiting for a second person's
approval; where it has not, the sweep stops at the saved versions and the page links to
the host, and `send_as_trial` returns None."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from units.models import ProfileVersion

TRIALS_MODULE = "deploys.services.trials"


def trial_service() -> Any | None:
    """`trial_request_create`, or None while deploys has no trials."""
    try:
        module = importlib.import_module(TRIALS_MODULE)
    except ImportError:
        return None
    return getattr(module, "trial_request_create", None)


def send_as_trial(*, host: Any, versions: Sequence[ProfileVersion], requested_by: Any) -> Any:
    """The trial request for `versions` on `host` in their order (None: no trial service)."""
    create = trial_service()
    if create is None:
        return None
    return create(host=host, candidates=list(versions), requested_by=requested_by)


__all__ = ["send_as_trial", "trial_service"]
