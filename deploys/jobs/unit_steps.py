"""Unit-file steps besides the push: putting the previous unit back (a rollback), and
removing a deployed unit. Both are recorded like a push: a `PushedUnit` row (what is on the
host now, what it replaced) and an audit event, in one transaction.
"""

from __future__ import annotations

import dataclasses

from django.db import transaction

from audit.models import AuditKind
from audit.services import record
from deploys.jobs.context import JobContext
from deploys.jobs.recorder import Recorder
from deploys.jobs.results import Preflighted, Pushed, Restored
from deploys.jobs.steps import StepResult
from deploys.models import PushedUnit
from hostops.channel import UnitPushError, restore_backup
from hostops.channel.push import BACKUP_SUFFIX, sha256_hex, verify_problems
from hostops.service import VllmService, vllm_service
from linting.options import LintOptions
from units.linting import lint_rendered

STOP_S = 300.0


def _record(
    ctx: JobContext, kind: str, text: str, previous: bytes | None, **extra: object
) -> PushedUnit:
    request = ctx.request
    previous_text = previous.decode("utf-8", errors="replace") if previous else ""
    with transaction.atomic():
        pushed = PushedUnit.objects.create(
            host=ctx.host,
            unit_name=request.unit_name,
            request=request,
            text=text,
            sha256=sha256_hex(text.encode("utf-8")) if text else "",
            previous_text=previous_text,
            previous_sha256=sha256_hex(previous) if previous else "",
            backup_path="",
        )
        record(
            kind=kind,
            actor=None,
            obj=pushed,
            payload={
                "request": request.pk,
                "unit": ctx.unit,
                "path": ctx.path,
                "sha256": pushed.sha256,
                "previous_sha256": pushed.previous_sha256,
                **extra,
            },
            host_name=ctx.host.name,
            profile_name=request.profile_version.profile.name,
        )
    return pushed


def restore_previous(
    ctx: JobContext, rec: Recorder, before: Preflighted, push: Pushed
) -> StepResult:
    """Put back the unit this job replaced (its `.specadmin-prev` backup), reload and
    verify; a unit that was brand new is stopped and removed instead (nothing to go back
    to). Decides whether the service steps after it run (`Restored.restart_previous`)."""
    pushed = push.result
    if not pushed.changed:
        rec.provide(Restored(before.service, restart_previous=before.was_active, unit_gone=False))
        return StepResult.skipped(
            "this job did not change the unit file: "
            + ("the same unit is started again" if before.was_active else "nothing to put back")
        )
    if pushed.previous is None:
        rec.provide(Restored(before.service, restart_previous=False, unit_gone=True))
        ctx.transport.systemctl("stop", "--", ctx.unit, check=False, timeout=STOP_S)
        ctx.transport.remove_file(ctx.path)
        ctx.transport.daemon_reload()
        _record(
            ctx,
            AuditKind.UNIT_REMOVED,
            "",
            ctx.request.unit_text.encode("utf-8"),
            reason="rollback of a new unit",
        )
        rec.log(f"{ctx.unit} was new: stopped and removed, there is no previous unit")
        return StepResult.success(removed=ctx.path)
    try:
        restored = restore_backup(ctx.transport, ctx.unit, unit_dir=ctx.unit_dir)
    except UnitPushError as exc:
        return StepResult.failed(f"cannot put the previous unit back: {exc}")
    previous_text = pushed.previous.decode("utf-8", errors="replace")
    _record(
        ctx,
        AuditKind.ROLLBACK,
        previous_text,
        restored.previous,  # the unit this job had written
        backup_path=ctx.path + BACKUP_SUFFIX,
    )
    problems = verify_problems(restored.properties, ctx.path)
    if problems:
        return StepResult.failed(
            "the previous unit is back but systemd did not load it: " + "; ".join(problems)
        )
    rec.log(f"previous unit back in {ctx.path} (sha256 {restored.sha256}), systemd reloaded")
    restart = before.was_active
    service = before.service
    if restart:
        service = _service_of(ctx, previous_text)
    else:
        rec.log("the service did not run before this job: it is left stopped")
    rec.provide(Restored(service, restart_previous=restart, unit_gone=False))
    return StepResult.success(sha256=restored.sha256, restart=restart)


def _service_of(ctx: JobContext, text: str) -> VllmService | None:
    """The vLLM server of the restored unit (its port or model may differ)."""
    options = dataclasses.replace(LintOptions(), shellcheck=False)
    report = lint_rendered(text, ctx.unit, ctx.unit, options)
    commands = report.files[0].commands if report.files else []
    try:
        return vllm_service(commands, {})
    except ValueError:
        return None


def remove_unit(ctx: JobContext, rec: Recorder) -> StepResult:
    """Disable, delete the unit file (and its backup), reload; systemd must no longer
    know the unit. The removed text stays in the database and the audit history."""
    disabled = ctx.transport.systemctl("disable", "--", ctx.unit, check=False, timeout=60)
    rec.log(f"systemctl disable {ctx.unit}: exit {disabled.exit_code}")
    previous = ctx.transport.read_file(ctx.path)
    removed = ctx.transport.remove_file(ctx.path)
    backup = ctx.transport.remove_file(ctx.path + BACKUP_SUFFIX)
    ctx.transport.daemon_reload()
    state = rec.read(
        "after_remove", ctx.transport.unit_properties(ctx.unit, ("LoadState", "FragmentPath"))
    )
    _record(ctx, AuditKind.UNIT_REMOVED, "", previous, backup_removed=backup)
    if state.get("LoadState") not in ("not-found", "masked") and state.get("FragmentPath"):
        return StepResult.failed(f"{ctx.unit} is still known to systemd after the removal: {state}")
    rec.log(
        f"removed {ctx.path}"
        + (" and its backup" if backup else "")
        + f"; systemd reloaded, {ctx.unit} is {state.get('LoadState')}"
    )
    return StepResult.success(removed=removed, backup_removed=backup)


__all__ = ["remove_unit", "restore_previous"]
