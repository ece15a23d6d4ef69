"""Helpers of the rollout tests: a job's end as the runner writes it (without a host)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.test import TestCase
from django.utils import timezone

from deploys.models import DeployRequest, JobStep
from fleet import coordinator
from fleet.models import Rollout

T = TypeVar("T")


def end_job(request_id: int, status: str, *, regressed: bool = False) -> None:
    """What the runner leaves when a job ends: claimed, a benchmark step when it
    measured, the final status (only from approved/running, as the runner's UPDATEs)."""
    now = timezone.now()
    DeployRequest.objects.filter(pk=request_id, status="approved").update(
        status="running", started_at=now
    )
    if regressed:
        JobStep.objects.create(
            request_id=request_id,
            name="benchmark",
            status="failed",
            result={"outcome": "regressed", "gate": "regressed", "output_tok_s": 60.0},
        )
    DeployRequest.objects.filter(pk=request_id, status="running").update(
        status=status, finished_at=now, status_reason=f"test: {status}"
    )


def committed(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call `function` and run what it left for `transaction.on_commit` (the test's own
    transaction never commits)."""
    with TestCase.captureOnCommitCallbacks(execute=True):
        return function(*args, **kwargs)


def advance(rollout: Rollout) -> Rollout:
    committed(coordinator.advance, rollout.pk)
    rollout.refresh_from_db()
    return rollout
