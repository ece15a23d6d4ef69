"""What an interrupted deploy job left on its host, as its recorded steps say.

Why from the steps and not read on the host: the housekeeping that marks a job
interrupted (`deploys.jobs.runner.fail_abandoned_deploys`) runs without a connection to
every host whose worker died, and that host may be the reason the worker died. A push is
an atomic rename (`hostops.channel.push`), so its file is either text, never half of one;
a push cut off mid-step is said as "one or the other". The rollout page shows this per
host (docs/rollouts.md, "Exactly once, and workers that die").
"""

from __future__ import annotations

from deploys.models import DeployRequest, JobStep

Status = JobStep.Status
Phase = JobStep.Phase


def _file_words(steps: list[JobStep]) -> str:
    pushes = [s for s in steps if s.name == "push"]
    if not pushes:
        return "the unit it had before this job (not pushed)"
    last = pushes[-1]
    if last.status != Status.SUCCEEDED:
        return "the requested unit or the one it had before (a push was cut off; it is atomic)"
    if last.phase == Phase.ROLLBACK:
        return "the unit it had before this job (put back)"
    return "the requested unit"


def _service_words(steps: list[JobStep]) -> str:
    done = [s for s in steps if s.name in ("stop", "start") and s.status == Status.SUCCEEDED]
    if not done:
        return "not stopped by this job"
    if done[-1].name == "start":
        return "started by this job and not stopped since"
    return "stopped by this job and not started since"


def interrupted_deploy_state(request: DeployRequest) -> str:
    """The host state an interrupted deploy's request records: its unit file and service
    as its steps left them (not read on the host)."""
    steps = list(
        JobStep.objects.filter(request=request, name__in=("push", "stop", "start"))
        .exclude(status=Status.SKIPPED)
        .order_by("pk")
    )
    return (
        f"{request.unit_name}.service on {request.host.name}: its file is "
        f"{_file_words(steps)}; {_service_words(steps)} (from the job's steps, not read on "
        "the host)"
    )


__all__ = ["interrupted_deploy_state"]
