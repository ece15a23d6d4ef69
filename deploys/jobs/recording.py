"""Recording a job's steps: one `JobStep` row per step (its log, result, what it read,
every command the transport ran with exit codes and durations, live progress) and the
`job.step_*` audit events, each written in the same transaction as the row."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.models import AuditKind
from audit.services import record
from deploys.jobs.context import JobContext
from deploys.jobs.flow import Results, Step, call
from deploys.jobs.recorder import Recorder
from deploys.jobs.results import Stopped
from deploys.jobs.steps import Outcome, StepResult
from deploys.models import DeployRequest, JobStep
from hostops.channel import TransportError
from hostops.channel.bounds import STORED_LOG_CHARS, clip_json, clip_text
from hostops.channel.records import CommandRecord, records_json

PROGRESS_EVERY_S = 1.0
STEP_STATUS = {
    Outcome.OK: JobStep.Status.SUCCEEDED,
    Outcome.SKIPPED: JobStep.Status.SKIPPED,
    Outcome.FAILED: JobStep.Status.FAILED,
    Outcome.VOID: JobStep.Status.FAILED,
    Outcome.REGRESSED: JobStep.Status.FAILED,
    Outcome.CANCELLED: JobStep.Status.FAILED,
}


def audit(kind: str, request: DeployRequest, payload: dict[str, Any], actor: Any = None) -> None:
    record(
        kind=kind,
        actor=actor,  # None: the worker; people are on the request's own events
        obj=request,
        payload=payload,
        host_name=request.host.name,
        profile_name=request.profile_version.profile.name,
    )


def _phase(phase: str) -> dict[str, str]:
    """The phase in audit payloads, only when it is not the main one (older events)."""
    return {} if phase == JobStep.Phase.MAIN else {"phase": str(phase)}


def take_records(ctx: JobContext) -> list[CommandRecord]:
    transport = ctx.existing_transport
    return transport.command_log.take() if transport is not None else []


def progress_writer(step_id: int) -> Callable[[str], None]:
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
                "message": clip_text(message, 500),
                "at": timezone.now().isoformat(),
            }
        )

    return write


def run_step(ctx: JobContext, step: Step, results: Results) -> StepResult:
    """Run one step with the results it needs (`deploys.jobs.flow.call`), record it, and
    keep what it provides in `results`."""
    request, name, phase = ctx.request, step.name, ctx.phase
    with transaction.atomic():
        row = JobStep.objects.create(
            request=request, name=name, phase=phase, trial_position=ctx.trial_position
        )
        audit(
            AuditKind.JOB_STEP_STARTED,
            request,
            {"request": request.pk, "step": name, **_phase(phase)},
        )
    rec = Recorder(on_progress=progress_writer(row.pk))
    take_records(ctx)  # anything done between steps belongs to no step
    # A step that raised once the service was (or may have been) stopped asks for the
    # previous unit back, as its own failures there do.
    try:
        result = call(step, ctx, rec, results)
    except TransportError as exc:  # expected on real networks: a clear one-line reason
        rec.log(f"{type(exc).__name__}: {exc}")
        result = StepResult.failed(f"{type(exc).__name__}: {exc}", rollback=results.has(Stopped))
    except Exception as exc:
        rec.log(traceback.format_exc())
        result = StepResult.failed(
            f"unexpected {type(exc).__name__}: {exc}", rollback=results.has(Stopped)
        )
    if result.reason:
        rec.log(f"{result.outcome}: {result.reason}")
    status = STEP_STATUS[result.outcome]
    payload: dict[str, Any] = {
        "request": request.pk,
        "step": name,
        "outcome": str(result.outcome),
        **_phase(phase),
    }
    if result.reason:
        payload["reason"] = result.reason
    commands = records_json(take_records(ctx))
    with transaction.atomic():
        JobStep.objects.filter(pk=row.pk).update(
            status=status,
            finished_at=timezone.now(),
            # Host output is clipped on its way into the database (`bounds`).
            log=clip_text("\n".join(rec.lines), STORED_LOG_CHARS),
            result=clip_json(
                {"outcome": str(result.outcome), "reason": result.reason, **result.data}
            ),
            commands=commands,
            reads=clip_json(rec.reads),
            progress={},
        )
        kind = (
            AuditKind.JOB_STEP_FAILED
            if status == JobStep.Status.FAILED
            else AuditKind.JOB_STEP_FINISHED
        )
        audit(kind, request, payload | {"commands": commands["count"]})
        if result.ok:
            label = name if phase == JobStep.Phase.MAIN else f"{phase}.{name}"
            DeployRequest.objects.filter(pk=request.pk).update(last_step=label)
    return result


def skip(ctx: JobContext, names: list[str], why: str) -> None:
    """Steps that did not run (in the context's phase), so the job page shows the whole
    pipeline."""
    now = timezone.now()
    JobStep.objects.bulk_create(
        JobStep(
            request=ctx.request,
            name=name,
            phase=ctx.phase,
            status=JobStep.Status.SKIPPED,
            finished_at=now,
            log=f"not run: {why}",
            trial_position=ctx.trial_position,
        )
        for name in names
    )


__all__ = ["audit", "progress_writer", "run_step", "skip", "take_records"]
