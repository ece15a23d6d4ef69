"""The steps of a deploy job: plain functions `step(ctx, rec, *needs) -> StepResult`.

They know nothing of django-q2, JobStep rows or the audit chain's bookkeeping of steps:
the runner (`deploys.jobs.runner`) records every step and decides what happens next
(`deploys.jobs.pipelines` lists the steps of each request kind, with what each needs and
provides; `deploys.jobs.flow` says how). A step reads the job's frozen context
(`deploys.jobs.context`), writes its evidence to its recorder (`deploys.jobs.recorder`),
is given the earlier steps' typed results it needs and provides its own
(`deploys.jobs.results`). A step reports an expected refusal by returning
`StepResult.void(...)` (the approval no longer describes reality) or
`StepResult.failed(...)` (it could not be done); anything it raises is an unexpected
failure, recorded the same way.

This module: the step outcome, preflight, push and daemon-reload. The service's own steps
(stop, GPU-clean, start, journal, readiness) are in `deploys.jobs.service_steps`, the
unit-file steps of rollbacks and removals in `deploys.jobs.unit_steps`.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from django.db import transaction

from audit.models import AuditKind
from audit.services import record
from deploys.approvals import approval_problems
from deploys.existing_units import ExistingUnit, existing_unit
from deploys.jobs.context import JobContext
from deploys.jobs.recorder import Recorder
from deploys.jobs.results import Preflighted, Pushed
from deploys.models import DeployRequest, PushedUnit
from deploys.selectors import lint_versions
from deploys.unit_policy import denied_unit_reason, overwrite_problems
from hostops.channel import PushInterrupted, TransportError, UnitPushError, push_unit
from hostops.channel.bounds import clip_text
from hostops.channel.push import PushResult, sha256_hex, verify_problems
from hostops.service import VllmService, vllm_service
from linting.findings import Severity
from linting.options import LintOptions
from linting.report import CommandInfo
from units.linting import lint_rendered
from units.rendering import environment_items

MAX_REASON_CHARS = 2000


class Outcome(StrEnum):
    OK = "ok"
    SKIPPED = "skipped"  # nothing to do here (said why); the job goes on
    FAILED = "failed"  # could not be done; the request ends `failed`
    VOID = "void"  # the approval no longer holds; the request ends `void`
    REGRESSED = "regressed"  # it runs, but worse than before (the benchmark's verdict)
    CANCELLED = "cancelled"  # someone cancelled the job during a wait


@dataclass(frozen=True)
class StepResult:
    """What a step did: its outcome, a one-line reason when not OK, and JSON facts.

    `rollback`: the step asks for the previous unit to be put back (the runner does so
    when the profile allows rollbacks). Failures after the service was touched ask for it
    by default; a benchmark's "regressed" does too.
    """

    outcome: Outcome = Outcome.OK
    reason: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    rollback: bool = False

    @property
    def ok(self) -> bool:
        """The job may go on (succeeded or skipped)."""
        return self.outcome in (Outcome.OK, Outcome.SKIPPED)

    @classmethod
    def success(cls, **data: Any) -> StepResult:
        return cls(Outcome.OK, "", data)

    @classmethod
    def skipped(cls, reason: str, **data: Any) -> StepResult:
        return cls(Outcome.SKIPPED, _clip(reason), data)

    @classmethod
    def failed(cls, reason: str, *, rollback: bool = False, **data: Any) -> StepResult:
        return cls(Outcome.FAILED, _clip(reason), data, rollback)

    @classmethod
    def void(cls, reason: str, **data: Any) -> StepResult:
        return cls(Outcome.VOID, _clip(reason), data)

    @classmethod
    def regressed(cls, reason: str, *, rollback: bool = True, **data: Any) -> StepResult:
        return cls(Outcome.REGRESSED, _clip(reason), data, rollback)

    @classmethod
    def cancelled(cls, reason: str, **data: Any) -> StepResult:
        return cls(Outcome.CANCELLED, _clip(reason), data)


def _clip(text: str) -> str:
    return clip_text(text, MAX_REASON_CHARS)


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


# --------------------------------------------------------------------------------------
# preflight


def preflight(ctx: JobContext, rec: Recorder) -> StepResult:
    """Re-check, right before touching the host, everything the approval assumed.

    Between approval and execution time passes (a queue, a lock wait): the approval may
    have expired, the host may have been re-probed to other versions, or someone may have
    edited the unit on the host. Any of these voids the request; nothing is written.
    """
    request = ctx.request
    # This job's claim moved the request to `running`; the rules judge an approval, so
    # they are asked about the request as it was claimed.
    as_claimed = copy.copy(request)
    as_claimed.status = DeployRequest.Status.APPROVED
    problems = approval_problems(request=as_claimed, now=ctx.now())
    if problems:
        rec.log("approval re-check: " + "; ".join(problems))
        return StepResult.void("approval no longer valid: " + "; ".join(problems))
    rec.log("approval re-check: still valid")

    text_sha = sha256_hex(request.unit_text.encode("utf-8"))
    if not (text_sha == request.unit_sha256 == request.approved_sha256):
        return StepResult.void(
            f"the unit text (sha256 {text_sha}) is not the approved one "
            f"(approved {request.approved_sha256 or 'nothing'})"
        )

    lint = None
    service: VllmService | None = None
    environment: dict[str, str] = {}
    if ctx.kind != DeployRequest.Kind.REMOVE:  # a unit being removed need not be right
        lint = _lint_approved_text(ctx, rec)
        if lint.errors:
            return StepResult.void(
                f"the approved unit has lint errors for systemd {lint.systemd_version} / "
                f"vLLM {lint.vllm_version} on {ctx.host.name}: " + "; ".join(lint.errors[:5]),
                lint=lint.as_json(),
            )
        environment = dict(environment_items(_unit_profile_data(ctx)))
        try:
            service = vllm_service(lint.commands, environment)
            rec.log(
                f"vLLM server: {service.style} {service.model!r} as "
                f"{service.served_model_name!r} on {service.base_url} (from the host)"
            )
        except ValueError as exc:
            rec.log(f"no vLLM server found in the unit ({exc}): readiness is the unit's state")

    try:
        live = ctx.transport.read_file(ctx.path)
    except TransportError as exc:
        return StepResult.failed(f"cannot reach host {ctx.host.name}: {_error(exc)}")
    live_sha = "" if live is None else sha256_hex(live)
    rec.log(
        f"{ctx.path} on {ctx.host.name}: "
        + (f"sha256 {live_sha}" if live is not None else "absent")
    )
    if live_sha != request.host_unit_sha256:
        return StepResult.void(
            f"{ctx.path} on {ctx.host.name} changed since the request was made "
            f"(now {live_sha or 'absent'}, approved against "
            f"{request.host_unit_sha256 or 'absent'}); request a new deploy to see the diff",
            live_sha256=live_sha,
        )
    # Deny list and foreign units, against the host as it is now: the file, and every other
    # file systemd loads under the name (a vendor unit or a drop-in that appeared since the
    # request needs an adoption, as it would have then).
    try:
        existing = _loaded_now(ctx, rec)
    except TransportError as exc:
        return StepResult.failed(f"cannot ask systemd on {ctx.host.name}: {_error(exc)}")
    foreign = overwrite_problems(
        host=ctx.host, unit_name=request.unit_name, current=live, existing=existing
    )
    if foreign:
        return StepResult.void("; ".join(foreign), live_sha256=live_sha)
    state = rec.read(
        "unit_before",
        ctx.transport.unit_properties(ctx.unit, ("LoadState", "ActiveState", "SubState")),
    )
    was_active = state.get("ActiveState") in ("active", "activating", "reloading")
    rec.log(f"{ctx.unit} before the job: {state.get('ActiveState')} ({state.get('SubState')})")
    rec.read("policy", ctx.policy.as_json())
    rec.provide(Preflighted(service, MappingProxyType(environment), was_active))
    return StepResult.success(
        sha256=text_sha,
        live_sha256=live_sha,
        lint=lint.as_json() if lint else None,
        was_active=was_active,
    )


def _loaded_now(ctx: JobContext, rec: Recorder) -> ExistingUnit | None:
    """What systemd loads under the unit's name now (`deploys.existing_units`), its files
    recorded by path and sha256; None for a removal, which writes nothing that a vendor
    unit or a drop-in would combine with."""
    if ctx.kind == DeployRequest.Kind.REMOVE:
        return None
    existing = existing_unit(ctx.transport, ctx.request.unit_name)
    rec.read(
        "loaded_from",
        [{"path": f.path, "kind": f.kind, "sha256": f.sha256} for f in existing.files],
    )
    return existing


def _unit_profile_data(ctx: JobContext) -> dict[str, Any]:
    """The profile data whose rendering is the request's unit text: a rollback request is
    about the version its text is (`deploys.running.version_of_text`), not about the job
    that last pushed that text."""
    data: dict[str, Any] = ctx.request.profile_version.data
    return data


@dataclass(frozen=True)
class _LintOutcome:
    systemd_version: int
    vllm_version: str
    errors: list[str]
    counts: dict[str, int]
    notes: list[str]
    commands: list[CommandInfo] = field(default_factory=list, compare=False)

    def as_json(self) -> dict[str, Any]:
        return {
            "systemd_version": self.systemd_version,
            "vllm_version": self.vllm_version,
            "errors": self.errors,
            "counts": self.counts,
            "notes": self.notes,
        }


def _lint_approved_text(ctx: JobContext, rec: Recorder) -> _LintOutcome:
    """Lint the exact stored text (not a re-rendering) for the host's versions, chosen the
    way the request page chose them (`deploys.selectors.lint_versions`)."""
    systemd_version, vllm_version, notes = lint_versions(
        profile_version=ctx.request.profile_version, host=ctx.host
    )
    options = dataclasses.replace(
        LintOptions(), systemd_version=systemd_version, vllm_version=vllm_version
    )
    report = lint_rendered(ctx.request.unit_text, ctx.unit, ctx.unit, options)
    errors = [
        f"{f.code} line {f.span.start.line}: {f.message}"
        for f in report.findings
        if f.severity >= Severity.ERROR
    ]
    for note in notes:
        rec.log(f"lint: {note}")
    counts = report.counts()
    rec.log(f"lint for systemd {systemd_version} / vLLM {vllm_version}: {counts}")
    commands = report.files[0].commands if report.files else []
    return _LintOutcome(systemd_version, vllm_version, errors, counts, notes, commands)


# --------------------------------------------------------------------------------------
# push


def push(ctx: JobContext, rec: Recorder) -> StepResult:
    """Atomically replace the unit (backup beside it), record what replaced what.

    `push_unit` refuses if the host's file is not the one the approver saw, and it runs
    daemon-reload + `systemctl show` itself (see `daemon_reload`). Called under the host
    lock, so removing temp files an interrupted earlier push left is safe here.
    """
    request = ctx.request
    denied = denied_unit_reason(request.unit_name)
    if denied:  # never written, whichever path led here
        return StepResult.failed(f"push refused: {denied}")
    stale = ctx.transport.remove_stale_temp_files(ctx.path)
    if stale:
        rec.log("removed temp files of an interrupted earlier push: " + ", ".join(stale))
    problems = ""
    try:
        result = push_unit(
            ctx.transport,
            ctx.unit,
            request.unit_text,
            unit_dir=ctx.unit_dir,
            expected_previous_sha256=request.host_unit_sha256,
        )
    except UnitPushError as exc:
        if exc.result is None:  # refused, or the host still/unknowably has the old unit
            where: dict[str, Any] = {}
            if isinstance(exc, PushInterrupted):
                where["host_file"] = exc.host_file
            return StepResult.failed(f"{exc.headline}: {exc}", removed_temp_files=stale, **where)
        # The files moved; systemd did not load the unit as expected. That is the
        # reload/verify outcome, reported by the next step; the push itself happened.
        result = exc.result
        problems = str(exc)
    rec.provide(Pushed(result, problems))
    pushed_unit = record_push(ctx, result)
    if result.recovered:
        rec.log(result.recovered)
    rec.log(
        f"wrote {result.path} (sha256 {result.sha256})"
        if result.changed
        else f"{result.path} already had this text (sha256 {result.sha256}); nothing written"
    )
    if result.backup_path:
        rec.log(f"previous unit kept as {result.backup_path} (sha256 {result.backup_sha256})")
    return StepResult.success(
        path=result.path,
        sha256=result.sha256,
        changed=result.changed,
        previous_sha256=result.previous_sha256 or "",
        backup_path=result.backup_path or "",
        pushed_unit=pushed_unit.pk,
        removed_temp_files=stale,
    )


def record_push(ctx: JobContext, result: PushResult, reason: str = "") -> PushedUnit:
    """The pushed text and what it replaced, in the database and the audit chain at once;
    `reason` says why where the push is not the request's own (a trial's write-back)."""
    request = ctx.request
    previous = result.previous.decode("utf-8", errors="replace") if result.previous else ""
    with transaction.atomic():
        pushed = PushedUnit.objects.create(
            host=ctx.host,
            unit_name=request.unit_name,
            request=request,
            text=request.unit_text,
            sha256=result.sha256,
            previous_text=previous,
            previous_sha256=result.previous_sha256 or "",
            backup_path=result.backup_path or "",
        )
        record(
            kind=AuditKind.UNIT_PUSHED,
            actor=None,
            obj=pushed,
            payload={
                "request": request.pk,
                "unit": ctx.unit,
                "path": result.path,
                "sha256": result.sha256,
                "previous_sha256": result.previous_sha256 or "",
                "backup_path": result.backup_path or "",
                "changed": result.changed,
                **({"recovered": clip_text(result.recovered)} if result.recovered else {}),
                **({"reason": reason} if reason else {}),
            },
            host_name=ctx.host.name,
            profile_name=request.profile_version.profile.name,
        )
    return pushed


# --------------------------------------------------------------------------------------
# daemon-reload


def daemon_reload(ctx: JobContext, rec: Recorder, pushed: Pushed) -> StepResult:
    """Report the daemon-reload and what systemd loaded, as `push_unit` did them.

    `push_unit` reloads right after its last rename and reads `systemctl show` (LoadState,
    FragmentPath, NeedDaemonReload) in the same call, so this step does not reload or
    query again: it turns that outcome into its own step, failed when systemd did not load
    the unit as written. The service itself is not started, stopped or restarted.
    """
    result = pushed.result
    props = result.properties
    rec.log("daemon-reload ran once, inside push_unit, right after the unit was renamed")
    rec.log("systemctl show: " + " ".join(f"{k}={v}" for k, v in sorted(props.items())))
    problems = "; ".join(verify_problems(props, result.path)) or pushed.problems
    if problems:
        backup = result.backup_path and f"; the previous unit is kept as {result.backup_path}"
        return StepResult.failed(
            f"systemd did not load {ctx.unit} as expected: {problems}"
            f"{backup or ''}; the running service was not touched",
            rollback=True,
            properties=props,
        )
    rec.log("the running service is not touched by the reload; the next steps restart it")
    return StepResult.success(properties=props, reloaded_by="push_unit")


__all__ = [
    "Outcome",
    "StepResult",
    "daemon_reload",
    "preflight",
    "push",
    "record_push",
]
