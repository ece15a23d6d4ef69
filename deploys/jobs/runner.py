"""Running jobs: claim the request once, hold the host, run the steps, record everything.

django-q2 delivers a task at least once (ORM broker: a task whose worker died is handed
out again after `retry`; a double click enqueues twice). "Executed exactly once" is
therefore decided here, in the database: the delivery whose conditional UPDATE moves the
request from `approved` to `running` runs it; every other delivery sees a row count of 0
and returns without side effects. One job per host at a time is the host lease
(`deploys.jobs.lease`).

Every step is a `JobStep` row (running → succeeded/failed, with its log and result) and
a `job.step_started` / `job.step_finished` / `job.step_failed` audit event written in the
same transaction as the row.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from audit.models import AuditKind
from audit.services import record
from deploys.connect import transport_for
from deploys.jobs.lease import HostBusy, HostLease, lease_seconds, wait_seconds
from deploys.jobs.steps import STEPS, DeployContext, Outcome, Step, StepResult
from deploys.locks import HostLock
from deploys.models import DeployRequest, Host, JobStep
from deploys.probe import probe_host
from deploys.selectors import host_probe_executables
from deploys.services.hosts import host_record_probe, host_record_probe_error
from deploys.transports import Transport, TransportError
from deploys.transports.records import CommandRecord, records_json

log = logging.getLogger(__name__)

LOCK_STEP = "host_lock"
_FINAL_STATUS = {
    Outcome.OK: DeployRequest.Status.SUCCEEDED,
    Outcome.SKIPPED: DeployRequest.Status.SUCCEEDED,
    Outcome.FAILED: DeployRequest.Status.FAILED,
    Outcome.REGRESSED: DeployRequest.Status.FAILED,
    Outcome.VOID: DeployRequest.Status.VOID,
}
_FINAL_KIND = {
    Outcome.OK: AuditKind.DEPLOY_SUCCEEDED,
    Outcome.SKIPPED: AuditKind.DEPLOY_SUCCEEDED,
    Outcome.FAILED: AuditKind.DEPLOY_FAILED,
    Outcome.REGRESSED: AuditKind.DEPLOY_FAILED,
    Outcome.VOID: AuditKind.DEPLOY_VOIDED,
}


def _connect(host: Host) -> Transport:
    return transport_for(host)


# --------------------------------------------------------------------------------------
# deploy


def run_deploy(
    request_id: int,
    *,
    steps: tuple[tuple[str, Step], ...] = STEPS,
    connect: Callable[[Host], Transport] = _connect,
    lock_wait: float | None = None,
) -> str:
    """Run the deploy job of an approved request; return the request's final status.

    A request that is not `approved` (already running or done, rejected, unknown) is left
    alone and its current status returned: that is a duplicate delivery, not an error.
    """
    request = _claim(request_id)
    if request is None:
        status = DeployRequest.objects.filter(pk=request_id).values_list("status", flat=True)
        current = status.first() or "missing"
        log.info("deploy request #%s not claimed (status %s): nothing to do", request_id, current)
        return current
    ctx = DeployContext(request=request, host=request.host, connect=connect)
    try:
        try:
            final = _run_claimed(ctx, steps, lock_wait)
        except Exception as exc:  # a bug or a database failure between steps
            log.exception("deploy request #%s crashed", request_id)
            final = StepResult.failed(f"job crashed: {type(exc).__name__}: {exc}")
        return _finish(ctx, final)
    finally:
        _clean_up(ctx)


def _clean_up(ctx: DeployContext) -> None:
    """Close the connection and free the host, whatever happened (a lease we fail to
    release here still expires on its own)."""
    try:
        ctx.close()
    except Exception:
        log.exception("closing the transport of deploy request #%s failed", ctx.request.pk)
    if ctx.lease is not None:
        try:
            ctx.lease.release()
        except Exception:
            log.exception("releasing the lock on %s failed", ctx.host.name)


def _claim(request_id: int) -> DeployRequest | None:
    """approved → running in one conditional UPDATE: the request if this call won, else
    None. The audit event commits with the claim."""
    with transaction.atomic():
        claimed = DeployRequest.objects.filter(
            pk=request_id, status=DeployRequest.Status.APPROVED
        ).update(status=DeployRequest.Status.RUNNING, started_at=timezone.now(), status_reason="")
        if claimed != 1:
            return None
        request = DeployRequest.objects.select_related("host", "profile_version__profile").get(
            pk=request_id
        )
        _audit(AuditKind.DEPLOY_STARTED, request, {"request": request_id})
    return request


def _run_claimed(
    ctx: DeployContext, steps: tuple[tuple[str, Step], ...], lock_wait: float | None
) -> StepResult:
    lock = _run_step(ctx, LOCK_STEP, lambda c: _take_lock(c, lock_wait))
    if not lock.ok:
        _skip(ctx, [name for name, _ in steps])
        return StepResult(lock.outcome, f"{LOCK_STEP}: {lock.reason}", lock.data)
    for index, (name, step) in enumerate(steps):
        if ctx.lease is not None and ctx.lease.lost:
            _skip(ctx, [n for n, _ in steps[index:]])
            return StepResult.failed(
                f"lost the lock on {ctx.host.name} before {name} (the lease expired and "
                "another job took it over); stopped"
            )
        result = _run_step(ctx, name, step)
        if not result.ok:
            _skip(ctx, [n for n, _ in steps[index + 1 :]])
            return StepResult(result.outcome, f"{name}: {result.reason}", result.data)
    return StepResult.success()


def _take_lock(ctx: DeployContext, wait: float | None) -> StepResult:
    """Wait for the host's lease; a HostBusy is this step failing, not a crash."""
    ctx.log(f"waiting for the lock on {ctx.host.name}")
    try:
        ctx.lease = HostLease.acquire(
            ctx.host.pk,
            purpose=f"deploy #{ctx.request.pk}",
            request_id=ctx.request.pk,
            wait=wait,
            label=ctx.host.name,
        )
    except HostBusy as exc:
        return StepResult.failed(str(exc))
    ctx.lease.start_renewing()
    if ctx.lease.took_over_from:
        ctx.log(f"took over the expired lease of {ctx.lease.took_over_from}")
    ctx.log(f"holding the lock as {ctx.lease.owner} (lease {ctx.lease.duration:g}s, renewed)")
    return StepResult.success(owner=ctx.lease.owner, took_over_from=ctx.lease.took_over_from)


def _run_step(
    ctx: DeployContext, name: str, step: Step, phase: str = JobStep.Phase.MAIN
) -> StepResult:
    """Run one step and record it: a JobStep row (log, result, what it read, every command
    the transport ran with exit codes and durations) and its audit events."""
    request = ctx.request
    with transaction.atomic():
        row = JobStep.objects.create(request=request, name=name, phase=phase)
        _audit(
            AuditKind.JOB_STEP_STARTED, request, {"request": request.pk, "step": name, **_ph(phase)}
        )
    ctx.lines = []
    ctx.reads = {}
    ctx.on_progress = _progress_writer(row.pk)
    _take_records(ctx)  # anything done between steps belongs to no step
    try:
        result = step(ctx)
    except TransportError as exc:  # expected on real networks: a clear one-line reason
        ctx.log(f"{type(exc).__name__}: {exc}")
        result = StepResult.failed(f"{type(exc).__name__}: {exc}")
    except Exception as exc:
        ctx.log(traceback.format_exc())
        result = StepResult.failed(f"unexpected {type(exc).__name__}: {exc}")
    if result.reason:
        ctx.log(f"{result.outcome}: {result.reason}")
    status = _STEP_STATUS[result.outcome]
    payload: dict[str, Any] = {
        "request": request.pk,
        "step": name,
        "outcome": str(result.outcome),
        **_ph(phase),
    }
    if result.reason:
        payload["reason"] = result.reason
    commands = records_json(_take_records(ctx))
    with transaction.atomic():
        JobStep.objects.filter(pk=row.pk).update(
            status=status,
            finished_at=timezone.now(),
            log="\n".join(ctx.lines),
            result={"outcome": str(result.outcome), "reason": result.reason, **result.data},
            commands=commands,
            reads=ctx.reads,
            progress={},
        )
        kind = (
            AuditKind.JOB_STEP_FAILED
            if status == JobStep.Status.FAILED
            else (AuditKind.JOB_STEP_FINISHED)
        )
        _audit(kind, request, payload | {"commands": commands["count"]})
    ctx.on_progress = lambda message: None
    return result


_STEP_STATUS = {
    Outcome.OK: JobStep.Status.SUCCEEDED,
    Outcome.SKIPPED: JobStep.Status.SKIPPED,
    Outcome.FAILED: JobStep.Status.FAILED,
    Outcome.VOID: JobStep.Status.FAILED,
    Outcome.REGRESSED: JobStep.Status.FAILED,
}
PROGRESS_EVERY_S = 1.0


def _ph(phase: str) -> dict[str, str]:
    """The phase in audit payloads, only when it is not the main one (older events)."""
    return {} if phase == JobStep.Phase.MAIN else {"phase": str(phase)}


def _take_records(ctx: DeployContext) -> list[CommandRecord]:
    transport = ctx.existing_transport
    return transport.command_log.take() if transport is not None else []


def _progress_writer(step_id: int) -> Callable[[str], None]:
    """A writer of JobStep.progress for one step, at most every PROGRESS_EVERY_S (a
    readiness wait reports every poll; the page needs a fresh line, not every line)."""
    started = time.monotonic()
    last = [0.0]

    def write(message: str) -> None:
        now = time.monotonic()
        if now - last[0] < PROGRESS_EVERY_S:
            return
        last[0] = now
        JobStep.objects.filter(pk=step_id, status=JobStep.Status.RUNNING).update(
            progress={
                "elapsed_s": round(now - started, 1),
                "message": message[:500],
                "at": timezone.now().isoformat(),
            }
        )

    return write


def _skip(ctx: DeployContext, names: list[str]) -> None:
    """Steps that did not run, so the job page shows the whole pipeline."""
    now = timezone.now()
    JobStep.objects.bulk_create(
        JobStep(
            request=ctx.request,
            name=name,
            status=JobStep.Status.SKIPPED,
            finished_at=now,
            log="not run: an earlier step did not succeed",
        )
        for name in names
    )


def _finish(ctx: DeployContext, result: StepResult) -> str:
    """running → the final status, audited, if the request is still `running`.

    It may not be: `fail_abandoned_deploys` fails a job whose lease it found expired (a
    worker stalled past its lease). That decision stands, and no second final event
    contradicting it is written; the status it set is returned.
    """
    status = _FINAL_STATUS[result.outcome]
    reason = result.reason or "unit pushed and loaded by systemd; the service was left as it was"
    with transaction.atomic():
        finished = DeployRequest.objects.filter(
            pk=ctx.request.pk, status=DeployRequest.Status.RUNNING
        ).update(status=status, status_reason=reason, finished_at=timezone.now())
        if finished:
            _audit(
                _FINAL_KIND[result.outcome],
                ctx.request,
                {"request": ctx.request.pk, "status": str(status), "reason": reason},
            )
    if not finished:
        current = DeployRequest.objects.values_list("status", flat=True).get(pk=ctx.request.pk)
        log.warning(
            "deploy request #%s ended %s (%s) but was already %s; left as it is",
            ctx.request.pk,
            status,
            reason,
            current,
        )
        return current
    log.info("deploy request #%s: %s (%s)", ctx.request.pk, status, reason)
    return str(status)


def _audit(kind: str, request: DeployRequest, payload: dict[str, Any]) -> None:
    record(
        kind=kind,
        actor=None,  # the worker; who requested and approved is on the request's own events
        obj=request,
        payload=payload,
        host_name=request.host.name,
        profile_name=request.profile_version.profile.name,
    )


def fail_abandoned_deploys(*, now: datetime | None = None) -> int:
    """Mark `failed` the requests a dead worker left `running` (django-q's timeout, an OOM
    kill, a reboot): claimed longer ago than the lock wait plus one lease, and no live
    lease on their host names them. A job that is alive renews its lease, so it is never
    touched; the next request for the host takes the expired lease over as usual."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=wait_seconds() + lease_seconds())
    alive = HostLock.objects.filter(request=OuterRef("pk"), expires_at__gt=now)
    stale = DeployRequest.objects.filter(
        status=DeployRequest.Status.RUNNING, started_at__lt=cutoff
    ).exclude(Exists(alive))
    failed = 0
    for request in stale.select_related("host", "profile_version__profile"):
        reason = "the worker running this job stopped (no live lease on the host)"
        with transaction.atomic():
            claimed = DeployRequest.objects.filter(
                pk=request.pk, status=DeployRequest.Status.RUNNING
            ).update(status=DeployRequest.Status.FAILED, status_reason=reason, finished_at=now)
            if claimed:
                _audit(AuditKind.DEPLOY_FAILED, request, {"request": request.pk, "reason": reason})
                failed += 1
    return failed


# --------------------------------------------------------------------------------------
# probe


def run_probe(
    host_id: int,
    actor_id: int | None,
    *,
    connect: Callable[[Host], Transport] = _connect,
) -> dict[str, Any]:
    """Probe a host's facts and store them; return the facts (or `{"error": …}`).

    Read-only on the host, so it does not take the host lock. A connection failure (no
    facts at all) keeps the old facts and records why (`host_record_probe_error`).
    """
    host = Host.objects.get(pk=host_id)
    actor = get_user_model().objects.filter(pk=actor_id).first() if actor_id else None
    try:
        with connect(host) as transport:
            facts = probe_host(
                host=host, transport=transport, vllm_executables=host_probe_executables(host=host)
            )
    except TransportError as exc:
        error = f"{type(exc).__name__}: {exc}"
        host_record_probe_error(host=host, error=error, actor=actor)
        return {"host": host.name, "error": error}
    host_record_probe(host=host, facts=facts, actor=actor)
    return facts


__all__ = ["LOCK_STEP", "run_deploy", "run_probe"]
