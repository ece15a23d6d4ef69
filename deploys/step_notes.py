"""A line of context for a step header on the job page: for readiness, its budget and how
long the last load on this host took (an estimate of this one), from the JobStep rows of
earlier jobs. In a trial each readiness is its own unit's: a candidate's budget is its
profile's readiness wait and its estimate its own last load. Read-only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deploys.jobs.policy import PipelinePolicy
from deploys.models import DeployRequest, JobStep

LOOKED_AT = 20  # earlier readiness steps searched for a load time


@dataclass(frozen=True)
class LastLoad:
    seconds: float
    request_id: int
    unit_name: str


def _ready_after(step: JobStep) -> float:
    value = (step.result or {}).get("ready_after_s")
    return float(value) if isinstance(value, (int, float)) and value > 0 else 0.0


def _unit_of(step: JobStep) -> str:
    """The unit a readiness step waited for: a trial candidate's own where it was one."""
    if step.trial_position:
        candidate = step.request.candidates.filter(position=step.trial_position).first()
        if candidate is not None:
            return candidate.unit_name
    return step.request.unit_name


def last_load(host_id: int, *, unit_name: str = "", before: int | None = None) -> LastLoad | None:
    """The newest earlier start on the host that became ready: seconds from the start to
    /health (readiness's `ready_after_s`, or the journal check's when the server answered
    during it). The same unit's own loads first, any unit's otherwise."""
    steps = (
        JobStep.objects.filter(
            request__host_id=host_id, name="readiness", status=JobStep.Status.SUCCEEDED
        )
        .exclude(request_id=before)
        .select_related("request")
        .order_by("-finished_at", "-pk")[:LOOKED_AT]
    )
    found: list[LastLoad] = []
    for step in steps:
        seconds = _ready_after(step)
        if not seconds:
            journal = JobStep.objects.filter(
                request_id=step.request_id, phase=step.phase, name="journal_check"
            ).first()
            seconds = _ready_after(journal) if journal else 0.0
        if seconds:
            found.append(LastLoad(seconds, step.request_id, _unit_of(step)))
    same = [load for load in found if load.unit_name == unit_name]
    chosen = same or found
    return chosen[0] if chosen else None


def _unit_and_budget(deploy: DeployRequest, position: int | None) -> tuple[str, Any]:
    """The unit a readiness step waited for and its budget: the request's own, or a trial
    candidate's (its profile's waits, as the trial job runs it)."""
    if position:
        candidate = deploy.candidates.filter(position=position).first()
        if candidate is not None:
            policy = PipelinePolicy.from_profile_data(candidate.profile_version.data)
            return candidate.unit_name, policy.ready_timeout_s
    pipeline: dict[str, Any] = (deploy.job_settings or {}).get("pipeline") or {}
    return deploy.unit_name, pipeline.get("ready_timeout_s")


def readiness_note(deploy: DeployRequest, position: int | None = None) -> str:
    """ "budget 1,800 s · the last load on this host took 42 s (#12)"; `position`: the
    trial unit the step acted on."""
    unit_name, budget = _unit_and_budget(deploy, position)
    parts = [f"budget {float(budget):,.0f} s"] if isinstance(budget, (int, float)) else []
    load = last_load(deploy.host_id, unit_name=unit_name, before=deploy.pk)
    if load is None:
        parts.append("no earlier load on this host to go by")
    else:
        which = "this unit" if load.unit_name == unit_name else load.unit_name
        parts.append(
            f"the last load of {which} on this host took {load.seconds:,.0f} s (#{load.request_id})"
        )
    return " · ".join(parts)


def step_notes(deploy: DeployRequest, steps: list[JobStep]) -> None:
    """Set `note` on the steps that have one (readiness; one note per trial unit)."""
    notes: dict[int | None, str] = {}
    for step in steps:
        if step.name == "readiness":
            position = step.trial_position
            if position not in notes:
                notes[position] = readiness_note(deploy, position)
            step.note = notes[position]  # type: ignore[attr-defined]


__all__ = ["LastLoad", "last_load", "readiness_note", "step_notes"]
