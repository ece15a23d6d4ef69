"""The rollout's coordinator: record the hosts' jobs that ended, then start the next batch,
wait, halt or finish (`fleet.planning.next_move` decides; this applies it).

It runs as short django-q2 tasks (`fleet.tasks`), never waiting for a job: each host's
deploy job is an ordinary one (`deploys.jobs.runner`, its own host lease, its gate against
its host's baseline), queued here when its batch comes, so a batch's jobs run in parallel
on different workers. When one ends, the runner sends `deploys.signals.job_ended`
(connected to `on_job_ended` by `fleet.apps`), which queues the coordinator again; a schedule
(`check_rollouts`, every minute) looks at every unfinished rollout too, for pauses that
ended and coordinator tasks that were lost.

Exactly once: one coordinator at a time per rollout (the rollout's row locked for the
transaction), each host claimed waiting → started with a conditional UPDATE before its
job is queued (on commit), and the job itself claims its request approved → running once.
A worker killed mid-job leaves its request `interrupted` (`deploys.jobs.liveness`); the
rollout then becomes interrupted, with every host's state recorded.
"""

from __future__ import annotations

import functools
import logging
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from audit.services import record
from deploys.jobs import queue as deploy_queue
from deploys.models import FINISHED_STATUSES, DeployRequest, JobStep
from fleet import planning, queue
from fleet.models import ENDED_EARLY, Rollout, RolloutHost
from fleet.services import close_waiting

log = logging.getLogger(__name__)

Status = Rollout.Status
State = RolloutHost.State
DStatus = DeployRequest.Status

BATCH_STARTED = "rollout.batch_started"
HOST_STARTED = "rollout.host_started"
HOST_ENDED = "rollout.host_ended"
HALTED = "rollout.halted"
INTERRUPTED = "rollout.interrupted"
SUCCEEDED = "rollout.succeeded"

_ENDED_CHILD = FINISHED_STATUSES | {DStatus.WITHDRAWN, DStatus.EXPIRED, DStatus.REJECTED}


def _audit(kind: str, rollout: Rollout, payload: dict[str, Any], host_name: str = "") -> None:
    record(
        kind=kind,
        actor=None,
        obj=rollout,
        object_repr=f"rollout #{rollout.pk}",
        host_name=host_name,
        profile_name=rollout.profile_version.profile.name,
        payload={"rollout": rollout.pk, **payload},
    )


def host_state_of(request: DeployRequest) -> str:
    """A finished job's request as the rollout counts it: a regression (the benchmark
    gate) apart from other failures."""
    if request.status == DStatus.SUCCEEDED:
        return State.SUCCEEDED
    if request.status == DStatus.INTERRUPTED:
        return State.INTERRUPTED
    if request.status in (DStatus.CANCELLED, DStatus.WITHDRAWN):
        return State.CANCELLED
    gate = (
        JobStep.objects.filter(request=request, name="benchmark", phase=JobStep.Phase.MAIN)
        .order_by("-pk")
        .values_list("result", flat=True)
        .first()
    )
    if isinstance(gate, dict) and gate.get("outcome") == "regressed":
        return State.REGRESSED
    return State.FAILED


def _sync(rollout: Rollout) -> None:
    """Started hosts whose job ended: their final state, audited once each."""
    started = rollout.hosts.filter(state=State.STARTED, request__status__in=_ENDED_CHILD)
    for row in started.select_related("host", "request"):
        request = row.request
        assert request is not None  # a started host has its request (rollout_approve)
        state = host_state_of(request)
        if RolloutHost.objects.filter(pk=row.pk, state=State.STARTED).update(
            state=state, finished_at=request.finished_at or timezone.now()
        ):
            _audit(
                HOST_ENDED,
                rollout,
                {
                    "host": row.host.name,
                    "batch": row.batch,
                    "request": request.pk,
                    "state": str(state),
                    "request_status": request.status,
                    "reason": request.status_reason[:2000],
                    "host_state": request.host_state[:2000],
                },
                host_name=row.host.name,
            )


def _views(rollout: Rollout) -> list[planning.HostView]:
    return [
        planning.HostView(batch=b, state=s)
        for b, s in rollout.hosts.order_by("position").values_list("batch", "state")
    ]


def allowed(rollout: Rollout) -> int:
    after = rollout.hosts.filter(batch__gt=0).count()
    return planning.allowed_failures(rollout.budget_kind, rollout.budget_value, after_canary=after)


def _end(rollout: Rollout, status: str, kind: str, reason: str) -> None:
    now = timezone.now()
    if not Rollout.objects.filter(pk=rollout.pk, status=Status.RUNNING).update(
        status=status, status_reason=reason, finished_at=now, next_batch_at=None
    ):
        return
    rollout.refresh_from_db()
    skipped = close_waiting(rollout, f"{status}: {reason}", None)
    _audit(
        kind,
        rollout,
        {
            "reason": reason,
            "not_reached": skipped,
            "hosts": {
                name: state for name, state in rollout.hosts.values_list("host__name", "state")
            },
        },
    )


def _pause_left(rollout: Rollout, batch: int) -> float:
    """Seconds until the pause after the previous batch is over (0: none left)."""
    if batch <= 0 or rollout.pause_s <= 0:
        return 0.0
    ended = rollout.hosts.filter(batch__lt=batch).aggregate(at=Max("finished_at"))["at"]
    if ended is None:
        return 0.0
    left = (ended + timedelta(seconds=rollout.pause_s) - timezone.now()).total_seconds()
    return max(0.0, float(left))


def _start_batch(rollout: Rollout, batch: int) -> list[int]:
    """Claim the batch's waiting hosts and queue their jobs on commit; the request ids."""
    now = timezone.now()
    started = []
    rows = rollout.hosts.filter(batch=batch, state=State.WAITING).select_related("host")
    for row in rows:
        if row.request_id is None:
            continue
        if RolloutHost.objects.filter(pk=row.pk, state=State.WAITING).update(
            state=State.STARTED, started_at=now
        ):
            started.append(row.request_id)
            _audit(
                HOST_STARTED,
                rollout,
                {"host": row.host.name, "batch": batch, "request": row.request_id},
                host_name=row.host.name,
            )
            transaction.on_commit(functools.partial(deploy_queue.enqueue_deploy, row.request_id))
    Rollout.objects.filter(pk=rollout.pk).update(current_batch=batch, next_batch_at=None)
    _audit(BATCH_STARTED, rollout, {"batch": batch, "requests": started})
    return started


def advance(rollout_id: int) -> str:
    """One look at the rollout (idempotent; any number may run): returns its status."""
    with transaction.atomic():
        rollout = (
            Rollout.objects.select_for_update()
            .select_related("profile_version__profile")
            .filter(pk=rollout_id)
            .first()
        )
        if rollout is None:
            return "missing"
        _sync(rollout)
        if rollout.status != Status.RUNNING:
            return str(rollout.status)
        move = planning.next_move(_views(rollout), allowed=allowed(rollout))
        if move.action == "interrupt":
            _end(rollout, Status.INTERRUPTED, INTERRUPTED, move.reason)
        elif move.action == "halt":
            _end(rollout, Status.HALTED, HALTED, move.reason)
        elif move.action == "succeed":
            _end(rollout, Status.SUCCEEDED, SUCCEEDED, move.reason)
        elif move.action == "start":
            left = _pause_left(rollout, move.batch)
            if left > 0:
                Rollout.objects.filter(pk=rollout.pk).update(
                    next_batch_at=timezone.now() + timedelta(seconds=left)
                )
            else:
                _start_batch(rollout, move.batch)
        rollout.refresh_from_db()
        return str(rollout.status)


def on_job_ended(sender: type, *, request: DeployRequest, **_: Any) -> None:
    """`deploys.signals.job_ended` (sent inside the transaction that ended the job): the
    rollout's coordinator is queued once that transaction commits, so it reads the end."""
    request_id = request.pk
    transaction.on_commit(lambda: child_ended(request_id))


def child_ended(request_id: int) -> None:
    """A deploy job ended: if it is a rollout's, queue its coordinator."""
    rollout_id = (
        RolloutHost.objects.filter(request_id=request_id)
        .values_list("rollout_id", flat=True)
        .first()
    )
    if rollout_id is not None:
        queue.enqueue_advance(rollout_id)


def check_rollouts() -> int:
    """Advance every rollout that may still change; how many were looked at."""
    ids = set(
        Rollout.objects.filter(status__in=(Status.RUNNING, Status.PAUSED)).values_list(
            "pk", flat=True
        )
    ) | set(
        RolloutHost.objects.filter(
            state=State.STARTED, rollout__status__in=ENDED_EARLY
        ).values_list("rollout_id", flat=True)
    )
    for rollout_id in sorted(ids):
        try:
            advance(rollout_id)
        except Exception:
            log.exception("advancing rollout #%s failed", rollout_id)
    return len(ids)


__all__ = ["advance", "allowed", "check_rollouts", "child_ended", "host_state_of"]
