"""What a cancel of a request's job will do, in words, for the confirmation step the job
page asks before it cancels (`deploys.job_views.request_cancel`).

It says what the runner's `deploys.jobs.runner.cancel_and_put_back` does for this request
— stop B, put A's unit back, start A and wait for it; or stop and remove a brand-new B;
or, with nothing changed yet, just stop — named by the versions the texts are
(`deploys.running`), with the waits the approval covers (`deploys.jobs.policy`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deploys.jobs.policy import PipelinePolicy
from deploys.models import DeployRequest, JobStep
from deploys.running import version_names, versions_by_sha

Kind = DeployRequest.Kind
Status = DeployRequest.Status


@dataclass(frozen=True)
class CancelPlan:
    """The confirmation page's text: one line, what happens step by step, a note on when
    it differs, and the button's words."""

    summary: str
    steps: list[str] = field(default_factory=list)
    note: str = ""
    button: str = "Cancel the job"


def _named(sha: str, fallback: str) -> str:
    versions = versions_by_sha([sha]).get(sha, ())
    return version_names(versions) if versions else fallback


def _was_active(request: DeployRequest) -> bool | None:
    """Whether the service ran before the job, as its preflight found (None: not yet)."""
    preflight = (
        JobStep.objects.filter(request=request, name="preflight", phase=JobStep.Phase.MAIN)
        .order_by("-pk")
        .values_list("result", flat=True)
        .first()
    )
    if not preflight or "was_active" not in preflight:
        return None
    return bool(preflight["was_active"])


def cancel_plan(request: DeployRequest) -> CancelPlan:
    """What cancelling `request`'s job does now (queued, or running)."""
    host, unit = request.host.name, f"{request.unit_name}.service"
    if request.status == Status.APPROVED:
        return CancelPlan(
            f"the job has not started: it will not run, and nothing on {host} changes",
            button="Cancel the queued job",
        )
    stops = "The job stops at its next step (a wait, such as readiness, at once). "
    policy = PipelinePolicy.from_profile_data(request.profile_version.data)
    if request.kind == Kind.TRIAL:
        y = _named(request.unit_sha256, unit)
        in_place = request.candidates.filter(unit_name=request.unit_name).exists()
        text_back = (
            [
                f"Write {y}'s approved text back into {unit} (a candidate ran in it) and read "
                "it back: production is only started from its approved text."
            ]
            if in_place
            else []
        )
        return CancelPlan(
            f"stop the candidate that runs, start production {y} again and wait for it",
            [
                "Stop the candidate that runs now (if one does) and wait until its GPUs are free.",
                *text_back,
                f"Start {y} ({unit}) again and wait until it is ready (up to "
                f"{policy.ready_timeout_s / 60:g} min), then measure it once.",
                "Remove the candidates' unit files, unless kept.",
            ],
            "If production has not been stopped yet when the job sees the cancel, it just "
            "stops. Putting production back is what the trial's approval covers: no second "
            "approval, and a cancel never interrupts it.",
            f"Cancel the trial and put {y} back",
        )
    if request.kind not in (Kind.DEPLOY, Kind.ROLLBACK):
        kind = request.get_kind_display().lower()
        return CancelPlan(
            f"stop the {kind} where it is",
            note=stops + f"A {kind} has no earlier unit to put back: if it has stopped "
            f"{unit}, it stays stopped; the page then says what {host} runs.",
        )
    if not policy.rollback:
        return CancelPlan(
            "stop the job where it is; nothing is put back",
            note=stops + "Rollback is switched off for this profile (as approved): what the "
            f"job has done stays; the page then says what {host} runs.",
        )
    b = _named(request.unit_sha256, "the new unit")
    untouched = (
        f"If the job has not changed anything on {host} yet when it sees the cancel, it "
        "just stops. Putting things back is the way back the approval covers: no second "
        "approval, and a cancel never interrupts it."
    )
    if not request.host_unit_sha256:
        return CancelPlan(
            f"stop {b} and remove its unit",
            [f"Stop {b}.", f"Remove its unit file: {host} had no {unit} before this job."],
            untouched,
            f"Cancel, stop {b} and remove it",
        )
    a = _named(
        request.host_unit_sha256,
        f"the unit that was there before (sha256 {request.host_unit_sha256[:12]}…)",
    )
    minutes = f"{policy.ready_timeout_s / 60:g} min"
    ran = _was_active(request)
    last = (
        f"Leave {a} stopped: it did not run before this job."
        if ran is False
        else f"Start {a} again and wait until it is ready (up to {minutes})"
        + ("." if ran else ", if it ran before this job.")
    )
    return CancelPlan(
        f"stop {b}, put {a}'s unit back, start {a} and wait for it"
        if ran is not False
        else f"stop {b} and put {a}'s unit back",
        [f"Stop {b}.", f"Put {a}'s unit back in place of {unit} and reload systemd.", last],
        untouched,
        f"Cancel and put {a} back",
    )


__all__ = ["CancelPlan", "cancel_plan"]
