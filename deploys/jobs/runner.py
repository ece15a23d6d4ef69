"""Running jobs: claim the request once, hold the host, run the steps, roll back a failure,
record everything, and say what state the host is left in.

django-q2 delivers a task at least once (ORM broker: a task whose worker died is handed
out again after `retry`; a double click enqueues twice). "Executed exactly once" is
therefore decided here, in the database: the delivery whose conditional UPDATE moves the
request from `approved` to `running` runs it; another delivery returns without side
effects, except when the job it finds `running` lost its worker: then it runs it again
from the start if nothing on the host had been touched yet, and otherwise marks it
`interrupted` (never a blind re-run of a half-done restart). One job per host at a time
is the host lease (`deploys.jobs.lease`), taken in the order the jobs asked for it.

Steps are recorded by `deploys.jobs.recording`; which steps run, and what each is given
from the earlier ones, is `deploys.jobs.pipelines`.
A cancel (`cancel_requested_at`, set by `deploys.services.unit_requests`) is seen at the
next step boundary, and by long waits, which return early; then `cancel_and_put_back`
puts back what ran before.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from audit.models import AuditKind
from deploys import signals
from deploys.connect import transport_for
from deploys.jobs.context import JobContext, never_cancelled
from deploys.jobs.flow import Results, Step, step
from deploys.jobs.interrupted import interrupted_deploy_state
from deploys.jobs.lease import LOCK_STEP, HostBusy, HostLease, lease_seconds, wait_seconds
from deploys.jobs.liveness import lost_workers
from deploys.jobs.outcome import Job, JobOutcome, cancelled_by
from deploys.jobs.pipelines import (
    HOST_UNTOUCHED,
    PIPELINES,
    ROLLBACK,
    ROLLBACK_STARTS_FROM,
    TRIAL,
    Steps,
    can_roll_back,
    host_touched,
)
from deploys.jobs.policy import PipelinePolicy
from deploys.jobs.recorder import Recorder
from deploys.jobs.recording import audit, run_step, skip
from deploys.jobs.results import Pushed, Restored, Watched
from deploys.jobs.steps import Outcome, StepResult
from deploys.jobs.trial import (
    TrialSteps,
    interrupted_host_state,
    run_trial,
    where_it_stopped,
)
from deploys.models import DeployRequest, Host, JobStep
from deploys.probe import probe_host
from deploys.running import known_unit_names, on_host_payload, record_read
from deploys.selectors import host_probe_executables
from deploys.services.hosts import (
    host_probe_after_job,
    host_record_probe,
    host_record_probe_error,
)
from deploys.trials import candidates_of
from hostops.channel import Transport, TransportError
from hostops.channel.bounds import clip_text
from hostops.channel.push import sha256_hex

log = logging.getLogger(__name__)

CANCEL_POLL_S = 1.0
Status = DeployRequest.Status
_FINAL_KIND: dict[str, str] = {
    Status.SUCCEEDED: AuditKind.DEPLOY_SUCCEEDED,
    Status.FAILED: AuditKind.DEPLOY_FAILED,
    Status.ROLLED_BACK: AuditKind.DEPLOY_ROLLED_BACK,
    Status.ROLLBACK_FAILED: AuditKind.DEPLOY_ROLLBACK_FAILED,
    Status.CANCELLED: AuditKind.DEPLOY_CANCELLED,
    Status.VOID: AuditKind.DEPLOY_VOIDED,
    Status.INTERRUPTED: AuditKind.DEPLOY_INTERRUPTED,
}
_DONE: dict[str, str] = {
    DeployRequest.Kind.DEPLOY: "deployed: the new unit is running and ready",
    DeployRequest.Kind.ROLLBACK: "rolled back to the earlier version: it is running and ready",
    DeployRequest.Kind.RESTART: "restarted: the unit is running and ready",
    DeployRequest.Kind.REMOVE: "removed: the unit is stopped, disabled and deleted",
}


def _connect(host: Host) -> Transport:
    return transport_for(host)


# --------------------------------------------------------------------------------------
# deploy


def run_deploy(
    request_id: int,
    *,
    steps: Steps | None = None,
    connect: Callable[[Host], Transport] = _connect,
    lock_wait: float | None = None,
    trial: TrialSteps | None = None,
) -> str:
    """Run the job of an approved request; return the request's final status. `steps`
    (a deploy's, restart's, …) and `trial` (a trial's parts): tests give doubles.

    A request that is not `approved` is left alone and its current status returned (a
    duplicate delivery), unless it is `running` without a live worker (`_redelivered`).
    """
    request = _claim(request_id)
    if request is None:
        return _redelivered(
            request_id, steps=steps, connect=connect, lock_wait=lock_wait, trial=trial
        )
    return _run(request, steps, connect, lock_wait, trial)


def _run(
    request: DeployRequest,
    steps: Steps | None,
    connect: Callable[[Host], Transport],
    lock_wait: float | None,
    trial: TrialSteps | None = None,
) -> str:
    job = Job(JobContext.open(request, connect, cancel_requested=_cancel_checker(request.pk)))
    try:
        try:
            outcome = _run_claimed(job, steps or PIPELINES.get(request.kind, ()), lock_wait, trial)
        except Exception as exc:  # a bug or a database failure between steps
            log.exception("deploy request #%s crashed", request.pk)
            outcome = JobOutcome(Status.FAILED, f"job crashed: {type(exc).__name__}: {exc}")
        status = _finish(job.ctx, outcome, outcome.host_state or _final_host_state(job))
    finally:
        _clean_up(job.ctx)
    _announce(request, status)
    return status


def _announce(request: DeployRequest, status: str) -> None:
    """`job_finished`, once the host is free (the watchdog's check after a job may run),
    and a probe of the host, whose facts the job may have changed. The job has ended
    either way: a failure to queue the probe is logged, not the job's."""
    signals.send(signals.job_finished, DeployRequest, request=request, status=status)
    try:
        host_probe_after_job(host_id=request.host_id)
    except Exception:
        log.exception("queueing the probe after deploy request #%s failed", request.pk)


def _clean_up(ctx: JobContext) -> None:
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
        claimed = DeployRequest.objects.filter(pk=request_id, status=Status.APPROVED).update(
            status=Status.RUNNING, started_at=timezone.now(), status_reason=""
        )
        if claimed != 1:
            return None
        request = _load(request_id)
        audit(AuditKind.DEPLOY_STARTED, request, {"request": request_id, "kind": request.kind})
    return request


def _load(request_id: int) -> DeployRequest:
    return DeployRequest.objects.select_related(
        "host", "profile_version__profile", "rollback_to__request__profile_version"
    ).get(pk=request_id)


def _cancel_checker(request_id: int) -> Callable[[], bool]:
    """Has someone asked to cancel? Read from the database at most every CANCEL_POLL_S."""
    state = {"at": 0.0, "value": False}

    def cancelled() -> bool:
        if state["value"]:
            return True
        now = time.monotonic()
        if now - state["at"] >= CANCEL_POLL_S:
            state["at"] = now
            state["value"] = DeployRequest.objects.filter(
                pk=request_id, cancel_requested_at__isnull=False
            ).exists()
        return bool(state["value"])

    return cancelled


def _hold_host(job: Job, names: list[str], lock_wait: float | None) -> JobOutcome | None:
    """The budget check and the host_lock step: None once the job holds the host (its
    lease added to the context), else how the job ended."""
    budget = _budget_problem(job.ctx, lock_wait)
    if budget:
        skip(job.ctx, [LOCK_STEP, *names], "the job could outlive the worker's time limit")
        return JobOutcome(Status.FAILED, budget)
    lock = run_step(job.ctx, _lock_step(lock_wait), job.results)
    lease = job.results.latest(HostLease)
    if lease is not None:  # the steps run under the lease (and it is released at the end)
        job.ctx = dataclasses.replace(job.ctx, lease=lease)
    if lock.ok:
        return None
    skip(job.ctx, names, "an earlier step did not succeed")
    if lock.outcome is Outcome.CANCELLED:
        return cancel_and_put_back(job, "while it waited for the host")
    return JobOutcome(Status.FAILED, f"{LOCK_STEP}: {lock.reason}")


def _run_claimed(
    job: Job, steps: Steps, lock_wait: float | None, trial: TrialSteps | None = None
) -> JobOutcome:
    names = [s.name for s in steps]
    held = _hold_host(job, names, lock_wait)
    if held is not None:
        return held
    if job.ctx.kind == DeployRequest.Kind.TRIAL:
        return run_trial(job, trial or TRIAL)
    ctx = job.ctx
    for index, current in enumerate(steps):
        name = current.name
        rest = names[index + 1 :]
        if ctx.lease is not None and ctx.lease.lost:
            skip(ctx, names[index:], "the lock on the host was lost")
            return JobOutcome(
                Status.FAILED,
                f"lost the lock on {ctx.host.name} before {name} (its lease expired: the "
                "worker stalled past it, and another job may hold the host now); stopped "
                "without touching the host again",
            )
        if ctx.cancel_requested():
            skip(ctx, names[index:], "the job was cancelled")
            return cancel_and_put_back(job, f"before {name}")
        result = run_step(ctx, current, job.results)
        if result.ok:
            continue
        skip(ctx, rest, "an earlier step did not succeed")
        if result.outcome is Outcome.VOID:
            return JobOutcome(Status.VOID, f"{name}: {result.reason}")
        if result.outcome is Outcome.CANCELLED:
            return cancel_and_put_back(job, f"during {name}")
        return _after_failure(job, name, result)
    return JobOutcome(Status.SUCCEEDED, _DONE[ctx.kind])


def _after_failure(job: Job, name: str, result: StepResult) -> JobOutcome:
    """Roll back when the step asks for it, something was touched and the profile allows."""
    reason = f"{name}: {result.reason}"
    if not (result.rollback and can_roll_back(job.ctx.kind, job.results)):
        return JobOutcome(Status.FAILED, reason)
    if not job.ctx.policy.rollback:
        return JobOutcome(Status.FAILED, f"{reason}; rollback is switched off for this profile")
    failed = _rollback(job)
    if failed is None:
        return JobOutcome(
            Status.ROLLED_BACK, f"{reason}; rolled back: {_rolled_back_to(job.results)}"
        )
    where, why = failed
    return JobOutcome(
        Status.ROLLBACK_FAILED, f"{reason}; THE ROLLBACK FAILED too, at {where}: {why}"
    )


def _healthy(results: Results) -> bool:
    """Did the last watch of the phase see the server answer as ready."""
    watched = results.latest(Watched)
    return watched is not None and watched.healthy


def _rolled_back_to(results: Results) -> str:
    """Where a successful rollback left the host, in words for the request's page."""
    restored = results.latest(Restored)
    if restored is not None and restored.unit_gone:
        return "the new unit was removed again (the host had none before)"
    if _healthy(results):
        return "the previous unit is running and ready again"
    return "the previous unit is back in place" + (
        "" if restored is None or restored.restart_previous else " (it did not run before the job)"
    )


def _rollback(job: Job) -> tuple[str, str] | None:
    """The ROLLBACK steps, in their own phase and from what the failed phase found
    (ROLLBACK_STARTS_FROM); None when they all succeeded, else (step, reason). A cancel
    does not stop a rollback: it is the way back to a working host."""
    job.ctx = ctx = dataclasses.replace(
        job.ctx, phase=JobStep.Phase.ROLLBACK, cancel_requested=never_cancelled
    )
    job.results = job.results.carry(*ROLLBACK_STARTS_FROM)
    names = [s.name for s in ROLLBACK]
    for index, current in enumerate(ROLLBACK):
        result = run_step(ctx, current, job.results)
        if not result.ok:
            skip(ctx, names[index + 1 :], "the rollback stopped")
            return current.name, result.reason
    return None


# --------------------------------------------------------------------------------------
# cancel


def cancel_and_put_back(job: Job, when: str) -> JobOutcome:
    """A cancel, seen `when` ("during readiness"): put back what ran before, under the
    request's own approval — the approver approved "replace A with B, and back to A if B
    fails", and a cancel is B not wanted. So a job that changed the host runs the
    rollback path (`_rollback`: restore A's unit, start it again and wait for it if it
    ran before; a brand-new unit is stopped and removed), with no second approval; a
    cancel never interrupts that. Nothing changed yet: it just stops. The outcome says
    exactly which of these happened (docs/architecture.md, "The restart pipeline")."""
    ctx = job.ctx
    who = cancelled_by(ctx)
    said = f"cancelled by {who} {when}"

    def outcome(status: str, then: str, sep: str = ", ") -> JobOutcome:
        return JobOutcome(
            status, said + sep + then, {"cancel": {"by": who, "when": when, "then": then}}
        )

    if not host_touched(job.results):
        return outcome(Status.CANCELLED, "before anything changed on the host")
    if not can_roll_back(ctx.kind, job.results):
        kind = ctx.request.get_kind_display().lower()
        return outcome(
            Status.CANCELLED,
            f"a {kind} has no earlier unit to put back: see what the host runs",
            "; ",
        )
    if not ctx.policy.rollback:
        return outcome(
            Status.CANCELLED,
            "rollback is switched off for this profile (as approved): nothing was put back",
            "; ",
        )
    failed = _rollback(job)
    if failed is None:
        return outcome(Status.CANCELLED, _put_back(job.results))
    where, why = failed
    if where == "restore":
        return outcome(
            Status.ROLLBACK_FAILED, f"putting the previous unit back FAILED: {why}", "; "
        )
    return outcome(
        Status.ROLLBACK_FAILED,
        f"the previous unit was restored but did not become ready: {where}: {why}",
        "; ",
    )


def _put_back(results: Results) -> str:
    """What a cancel's rollback left on the host, in the request page's words."""
    restored = results.latest(Restored)
    pushed = results.latest(Pushed)
    if restored is not None and restored.unit_gone:
        return "the new unit was stopped and removed (the host had none before)"
    if restored is not None and not restored.restart_previous:
        return "previous unit restored (it did not run before the job: left stopped)"
    if pushed is not None and not pushed.result.changed:
        return "the unit (this job had not changed it) is running and ready again"
    return (
        "previous unit restored and ready"
        if _healthy(results)
        else "previous unit restored and started"
    )


def _lock_step(wait: float | None) -> Step:
    return step(LOCK_STEP, lambda ctx, rec: _take_lock(ctx, rec, wait), provides=HostLease)


def _take_lock(ctx: JobContext, rec: Recorder, wait: float | None) -> StepResult:
    """Wait for the host's lease, in turn, and provide it; a HostBusy is this step
    failing, not a crash."""
    rec.log(f"waiting for the lock on {ctx.host.name}")
    mine = JobStep.objects.filter(request=ctx.request, name=LOCK_STEP).order_by("-pk").first()

    def my_turn() -> bool:
        if ctx.cancel_requested():
            raise _Cancelled
        if mine is None:
            return True
        fresh = timezone.now() - timedelta(seconds=wait_seconds() + lease_seconds())
        return not JobStep.objects.filter(
            request__host=ctx.host,
            request__status=Status.RUNNING,
            request__started_at__gt=fresh,
            name=LOCK_STEP,
            status=JobStep.Status.RUNNING,
            pk__lt=mine.pk,
        ).exists()

    try:
        lease = HostLease.acquire(
            ctx.host.pk,
            purpose=f"{ctx.request.get_kind_display().lower()} #{ctx.request.pk}",
            request_id=ctx.request.pk,
            wait=wait,
            label=ctx.host.name,
            may_try=my_turn,
        )
    except HostBusy as exc:
        return StepResult.failed(str(exc))
    except _Cancelled:
        return StepResult.cancelled("cancelled while waiting for the host")
    rec.provide(lease)
    lease.start_renewing()
    if lease.took_over_from:
        rec.log(f"took over the expired lease of {lease.took_over_from}")
        _interrupt_taken_over(lease, ctx.request.pk)
    rec.log(f"holding the lock as {lease.owner} (lease {lease.duration:g}s, renewed)")
    return StepResult.success(owner=lease.owner, took_over_from=lease.took_over_from)


class _Cancelled(Exception):
    pass


def _budget_problem(ctx: JobContext, lock_wait: float | None) -> str:
    """Why this job could outlive django-q2's `timeout` (it would be killed half-way), or ""."""
    timeout = (getattr(settings, "Q_CLUSTER", {}) or {}).get("timeout")
    if not timeout:
        return ""
    lock = wait_seconds() if lock_wait is None else lock_wait
    if ctx.kind == DeployRequest.Kind.TRIAL:
        # Production once (stopped, then back), each candidate once with its own waits.
        policies = [ctx.policy] + [
            PipelinePolicy.from_profile_data(c.profile_version.data or {})
            for c in candidates_of(ctx.request)
        ]
        worst = lock + sum(p.worst_case_s() for p in policies)
        waits = (
            "lock wait, then for production and each candidate its own stop, GPU-clean, "
            "start, journal check and readiness wait"
        )
    else:
        passes = 2 if ctx.policy.rollback else 1
        worst = lock + passes * ctx.policy.worst_case_s()
        waits = (
            "lock wait, stop, GPU-clean, start, journal check and a readiness wait of "
            f"{ctx.policy.ready_timeout_s:,.0f} s"
            + (", twice with the rollback" if passes == 2 else "")
        )
    if worst <= timeout:
        return ""
    return (
        f"this job may take up to {worst:,.0f} s ({waits}), longer than the worker's time "
        f"limit Q_TIMEOUT={timeout} s: raise Q_TIMEOUT and Q_RETRY, or lower the profile's "
        "deploy-job waits; nothing was done on the host"
    )


def _final_host_state(job: Job) -> str:
    """What the request's page says the host runs at the end: read back while the job
    still holds the host; nothing ("") when it lost the host to another job."""
    if job.ctx.existing_transport is None:
        return "unchanged: the job never connected to the host"
    lease = job.ctx.lease
    return _host_state(job) if lease is not None and not lease.lost else ""


def _host_state(job: Job) -> str:
    """What the host runs now, read back: the unit's state and which text its file has."""
    ctx = job.ctx
    transport = ctx.existing_transport
    if transport is None:
        return ""
    try:
        state = transport.unit_properties(ctx.unit, ("LoadState", "ActiveState", "SubState"))
        text = transport.read_file(ctx.path)
    except TransportError as exc:
        return f"unknown: {ctx.host.name} could not be read ({exc})"
    finally:
        transport.command_log.take()
    request = ctx.request
    _bookkeeping(
        record_read,
        host=ctx.host,
        unit_name=request.unit_name,
        data=text,
        step="end",
        request=request,
    )
    sha = "" if text is None else sha256_hex(text)
    if text is None:
        which = "no unit file"
    elif sha == request.unit_sha256 and request.kind != DeployRequest.Kind.REMOVE:
        which = "the requested unit"
    elif sha == request.host_unit_sha256:
        which = "the unit it had before this job"
    else:
        which = f"another unit file (sha256 {sha[:12]}…)"
    active = f"{state.get('ActiveState', '?')} ({state.get('SubState', '?')})"
    if state.get("LoadState") == "not-found":
        return f"{ctx.unit} on {ctx.host.name}: not known to systemd; {which}"
    ready = ", answering /health" if _healthy(job.results) else ""
    return f"{ctx.unit} on {ctx.host.name}: {active}{ready}; its file is {which}"


def _bookkeeping(record: Callable[..., Any], **kwargs: Any) -> Any:
    """What runs where (`deploys.running`): recorded and named for the final event, but a
    failure there never keeps the job from finishing."""
    try:
        return record(**kwargs)
    except Exception:
        log.exception("recording what runs on %s failed", kwargs.get("host"))
        return None


def _finish(ctx: JobContext, outcome: JobOutcome, host_state: str) -> str:
    """running → the final status, audited, if the request is still `running`.

    It may not be: `fail_abandoned_deploys` marks interrupted a job whose lease it found
    expired (a worker stalled past its lease). That decision stands, and no second final
    event contradicting it is written; the status it set is returned.
    """
    on_host = _bookkeeping(on_host_payload, host=ctx.host, unit_name=ctx.request.unit_name) or {}
    with transaction.atomic():
        finished = DeployRequest.objects.filter(pk=ctx.request.pk, status=Status.RUNNING).update(
            status=outcome.status,
            status_reason=clip_text(outcome.reason, 4000),
            host_state=clip_text(host_state, 4000),
            finished_at=timezone.now(),
        )
        if finished:
            audit(
                _FINAL_KIND[outcome.status],
                ctx.request,
                {
                    "request": ctx.request.pk,
                    "kind": ctx.kind,
                    "status": str(outcome.status),
                    "reason": clip_text(outcome.reason, 4000),
                    "host_state": clip_text(host_state, 4000),
                    **outcome.details,
                    **on_host,
                },
            )
            signals.send_job_ended(ctx.request, str(outcome.status), outcome.reason)
    if not finished:
        current = DeployRequest.objects.values_list("status", flat=True).get(pk=ctx.request.pk)
        log.warning(
            "deploy request #%s ended %s (%s) but was already %s; left as it is",
            ctx.request.pk,
            outcome.status,
            outcome.reason,
            current,
        )
        return current
    log.info("deploy request #%s: %s (%s)", ctx.request.pk, outcome.status, outcome.reason)
    return str(outcome.status)


# --------------------------------------------------------------------------------------
# workers that died


def _redelivered(
    request_id: int,
    *,
    steps: Steps | None,
    connect: Callable[[Host], Transport],
    lock_wait: float | None,
    trial: TrialSteps | None = None,
) -> str:
    """A delivery of a request that is not `approved`: usually a duplicate (do nothing).

    If the request is `running` but its worker is gone (`deploys.jobs.liveness`: its lease
    expired, or it waited for the host longer than anyone does), it is taken over: run
    again from the start when no step that changes the host had begun, else marked
    `interrupted`.
    """
    now = timezone.now()
    row = DeployRequest.objects.filter(pk=request_id).values("status", "started_at").first()
    if row is None:
        return "missing"
    if row["status"] != Status.RUNNING or not lost_workers().filter(pk=request_id).exists():
        log.info("deploy request #%s not claimed (status %s): nothing to do", request_id, row)
        return str(row["status"])
    touched = (
        JobStep.objects.filter(request_id=request_id)
        .exclude(name__in=HOST_UNTOUCHED)
        .exclude(status=JobStep.Status.SKIPPED)
        .exists()
    )
    if touched:
        return _interrupt(_load(request_id), now, "a new delivery found it")
    with transaction.atomic():
        taken = DeployRequest.objects.filter(
            pk=request_id, status=Status.RUNNING, started_at=row["started_at"]
        ).update(started_at=now)
        if not taken:
            return Status.RUNNING
        request = _load(request_id)
        JobStep.objects.filter(request=request, status=JobStep.Status.RUNNING).update(
            status=JobStep.Status.FAILED, finished_at=now, log="interrupted: the worker stopped"
        )
        audit(
            AuditKind.DEPLOY_STARTED,
            request,
            {
                "request": request_id,
                "kind": request.kind,
                "resumed": "the worker stopped before anything changed on the host",
            },
        )
    return _run(request, steps, connect, lock_wait, trial)


def _interrupt(request: DeployRequest, now: datetime, how: str) -> str:
    """running → interrupted, with the last completed step; nothing is re-run."""
    running = list(
        JobStep.objects.filter(request=request, status=JobStep.Status.RUNNING).values_list(
            "name", flat=True
        )
    )
    last = request.last_step or "none"
    reason = (
        f"the worker running this job stopped ({how}); last completed step: {last}"
        + (f", in progress: {', '.join(running)}" if running else "")
        + ". The host may be half-way through; nothing is re-run automatically: look at the "
        "host, then request a restart or a rollback"
    )
    host_state = interrupted_deploy_state(request)
    if request.kind == DeployRequest.Kind.TRIAL:  # which of its units runs now, read there
        host_state = interrupted_host_state(request)
        reason += f"; the trial's steps say: {where_it_stopped(request)}"
    with transaction.atomic():
        claimed = DeployRequest.objects.filter(pk=request.pk, status=Status.RUNNING).update(
            status=Status.INTERRUPTED,
            status_reason=reason,
            host_state=clip_text(host_state, 4000),
            finished_at=now,
        )
        if not claimed:
            return DeployRequest.objects.values_list("status", flat=True).get(pk=request.pk)
        JobStep.objects.filter(request=request, status=JobStep.Status.RUNNING).update(
            status=JobStep.Status.FAILED, finished_at=now, log="interrupted: the worker stopped"
        )
        audit(
            AuditKind.DEPLOY_INTERRUPTED,
            request,
            {"request": request.pk, "reason": reason, "last_step": last, "in_progress": running},
        )
        signals.send_job_ended(request, str(Status.INTERRUPTED), reason)
    return str(Status.INTERRUPTED)


def fail_abandoned_deploys(*, now: datetime | None = None) -> int:
    """Mark `interrupted` the requests a dead worker left `running` (django-q's timeout,
    an OOM kill, a reboot): those `deploys.jobs.liveness.lost_workers` finds, as soon as
    their lease has expired (on the database clock; `now`: as of that instant). A job
    that is alive renews its lease, so it is never touched; the next request for the
    host takes the expired lease over as usual."""
    when = now or timezone.now()
    count = 0
    for request in lost_workers(now).select_related("host", "profile_version__profile"):
        if _interrupt(request, when, "no live lease on the host") == Status.INTERRUPTED:
            count += 1
    return count


def _interrupt_taken_over(lease: HostLease, own: int) -> None:
    """The job whose expired lease this one took over is gone: say so at once rather than
    at the next housekeeping run."""
    previous = lease.took_over_request
    if previous is None or previous == own:
        return
    request = DeployRequest.objects.filter(pk=previous, status=Status.RUNNING).first()
    if request is not None:
        _interrupt(request, timezone.now(), "the next job for the host took its expired lease over")


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
                host=host,
                transport=transport,
                vllm_executables=host_probe_executables(host=host),
                unit_names=known_unit_names(host=host),
            )
    except Exception as exc:  # every failure is a recorded probe error, never "queued" for ever
        if not isinstance(exc, TransportError):
            log.exception("probing %s failed", host.name)
        error = f"{type(exc).__name__}: {exc}"
        host_record_probe_error(host=host, error=error, actor=actor)
        return {"host": host.name, "error": error}
    host_record_probe(host=host, facts=facts, actor=actor)
    return facts


__all__ = ["LOCK_STEP", "Job", "JobOutcome", "cancel_and_put_back", "run_deploy", "run_probe"]
