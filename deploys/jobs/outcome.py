"""How a job ended, and the job as the runner holds it: shared by the runner
(`deploys.jobs.runner`) and the trial's driver (`deploys.jobs.trial`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deploys.jobs.context import JobContext
from deploys.jobs.flow import Results
from deploys.models import DeployRequest


@dataclass(frozen=True)
class JobOutcome:
    """How a job ended: the request's final status, the reason its page shows, and what
    the final audit event adds (a cancel: who, when, what was put back). `host_state`:
    what the host runs at the end when the job read it itself (a trial: every unit it
    touched); "" lets the runner read the request's unit back."""

    status: str
    reason: str
    details: dict[str, Any] = field(default_factory=dict)
    host_state: str = ""


@dataclass
class Job:
    """One run of a request's job as the runner holds it: the context of the phase that
    runs (the lease added once taken; the rollback's own copy), and that phase's results."""

    ctx: JobContext
    results: Results = field(default_factory=Results)


def cancelled_by(ctx: JobContext) -> str:
    """Who asked for the cancel, by username ("someone" when the row does not say)."""
    who = (
        DeployRequest.objects.filter(pk=ctx.request.pk)
        .values_list("cancel_requested_by__username", flat=True)
        .first()
    )
    return who or "someone"


__all__ = ["Job", "JobOutcome", "cancelled_by"]
