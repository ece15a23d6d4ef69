"""Which steps a job runs, by request kind, and the rollback that follows a failure.

deploy / rollback-to-version: preflight → vLLM check → push → daemon-reload → stop →
GPU-clean → start → journal check → readiness → benchmark (deploys only);
restart: the same without push and daemon-reload; remove: preflight → stop → GPU-clean →
remove. A failure once the unit file or the service was touched runs ROLLBACK (when the
profile allows it): put the previous unit back, then — if the service ran before the job —
the same stop → GPU-clean → start → journal → readiness path for it.
"""

from __future__ import annotations

from deploys.jobs.service_steps import (
    benchmark,
    gpu_clean,
    journal_check,
    readiness,
    start,
    stop,
    vllm_check,
)
from deploys.jobs.steps import DeployContext, Step, StepResult, daemon_reload, preflight, push
from deploys.jobs.unit_steps import remove_unit, restore_previous
from deploys.models import DeployRequest

Steps = tuple[tuple[str, Step], ...]
Kind = DeployRequest.Kind

RESTART_PATH: Steps = (
    ("stop", stop),
    ("gpu_clean", gpu_clean),
    ("start", start),
    ("journal_check", journal_check),
    ("readiness", readiness),
)
DEPLOY: Steps = (
    ("preflight", preflight),
    ("vllm_check", vllm_check),
    ("push", push),
    ("daemon_reload", daemon_reload),
    *RESTART_PATH,
    ("benchmark", benchmark),
)
PIPELINES: dict[str, Steps] = {
    Kind.DEPLOY: DEPLOY,
    Kind.ROLLBACK: DEPLOY,
    Kind.RESTART: (("preflight", preflight), ("vllm_check", vllm_check), *RESTART_PATH),
    Kind.REMOVE: (
        ("preflight", preflight),
        ("stop", stop),
        ("gpu_clean", gpu_clean),
        ("remove", remove_unit),
    ),
}
# Steps after which nothing on the host has changed yet: a job interrupted there may run
# again from the start (deploys.jobs.runner).
HOST_UNTOUCHED = frozenset({"", "host_lock", "preflight", "vllm_check"})


def _if_restarting(step: Step) -> Step:
    def wrapped(ctx: DeployContext) -> StepResult:
        if not ctx.restart_previous:
            return StepResult.skipped("the service did not run before this job: left stopped")
        return step(ctx)

    wrapped.__name__ = step.__name__
    wrapped.__doc__ = step.__doc__
    return wrapped


def _unless_removed(step: Step) -> Step:
    def wrapped(ctx: DeployContext) -> StepResult:
        if ctx.unit_gone:
            return StepResult.skipped("the new unit was removed: nothing left to stop")
        return step(ctx)

    wrapped.__name__ = step.__name__
    wrapped.__doc__ = step.__doc__
    return wrapped


ROLLBACK: Steps = (
    ("restore", restore_previous),
    ("stop", _unless_removed(stop)),
    ("gpu_clean", _if_restarting(gpu_clean)),
    ("start", _if_restarting(start)),
    ("journal_check", _if_restarting(journal_check)),
    ("readiness", _if_restarting(readiness)),
)


def can_roll_back(ctx: DeployContext) -> bool:
    """Is there anything to put back: a deploy or rollback request that changed the unit
    file or stopped the service."""
    if ctx.kind not in (Kind.DEPLOY, Kind.ROLLBACK):
        return False
    changed = ctx.push_result is not None and ctx.push_result.changed
    return changed or ctx.stop_attempted


__all__ = ["HOST_UNTOUCHED", "PIPELINES", "ROLLBACK", "Steps", "can_roll_back"]
