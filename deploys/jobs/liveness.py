"""Has a running job lost its worker? Decided from its host lease, on the database clock,
at the moment someone asks: the job page (which says "worker lost" as soon as the lease
has expired), the housekeeping that marks the request `interrupted`, a second delivery of
its task (`deploys.jobs.runner`).

A job that holds the host renews its lease from a thread every `RENEW_FRACTION` of it
(`deploys.jobs.lease`), during its longest waits too, so a lease that expired means its
worker stopped (or stalled for a whole lease, and then it stops at its next step). A job
still waiting in line for the host holds no lease: it counts as lost only once it has
waited longer than the lock wait plus a lease. Times are the database's (`Now()`), so
workers and web servers with skewed clocks agree (docs/architecture.md, "Jobs and steps").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import (
    DateTimeField,
    Exists,
    ExpressionWrapper,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.expressions import Combinable
from django.db.models.functions import Now

from deploys.jobs.lease import LOCK_STEP, lease_seconds, wait_seconds
from deploys.locks import HostLock
from deploys.models import DeployRequest, JobStep

Status = DeployRequest.Status


def _clock(now: datetime | None) -> Combinable:
    """The database's clock, or a given instant (tests, a sweep that says when)."""
    return Now() if now is None else Value(now, output_field=DateTimeField())


def lost_workers(now: datetime | None = None) -> QuerySet[DeployRequest]:
    """The `running` requests whose worker is gone: no live lease names them, and either
    their job had taken the host (its latest host_lock step succeeded) or it has waited
    longer than anyone waits for the host."""
    clock = _clock(now)
    alive = HostLock.objects.filter(request=OuterRef("pk"), expires_at__gt=clock)
    lock_step = (
        JobStep.objects.filter(request=OuterRef("pk"), name=LOCK_STEP)
        .order_by("-pk")
        .values("status")[:1]
    )
    overdue = ExpressionWrapper(
        clock - timedelta(seconds=wait_seconds() + lease_seconds()),
        output_field=DateTimeField(),
    )
    return (
        DeployRequest.objects.filter(status=Status.RUNNING)
        .annotate(lock_step=Subquery(lock_step))
        .exclude(Exists(alive))
        .filter(Q(lock_step=JobStep.Status.SUCCEEDED) | Q(started_at__lt=overdue))
    )


@dataclass(frozen=True)
class LostWorker:
    """Why the job page says "worker lost", in its words."""

    reason: str


def worker_lost(request: DeployRequest) -> LostWorker | None:
    """For a `running` request whose worker is gone, what the page says; else None."""
    if request.status != Status.RUNNING or not lost_workers().filter(pk=request.pk).exists():
        return None
    lease = (
        HostLock.objects.filter(request=request, expires_at__isnull=False)
        .annotate(now=Now())
        .values("expires_at", "now")
        .first()
    )
    expired = lease["expires_at"] if lease is not None else None
    if lease is not None and expired is not None:
        ago = max(0.0, (lease["now"] - expired).total_seconds())
        why = (
            f"its lease on {request.host.name} expired {ago:.0f} s ago "
            f"({expired:%H:%M:%S} UTC) and was not renewed"
        )
    else:
        why = f"no live lease on {request.host.name} names it (another job holds the host now)"
    return LostWorker(
        f"The worker running this job stopped: {why}. The housekeeping schedule marks the "
        "job interrupted at its next run (every minute); nothing is re-run automatically."
    )


__all__ = ["LostWorker", "lost_workers", "worker_lost"]
