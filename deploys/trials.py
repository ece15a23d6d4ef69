"""A trial's plan, read-only: what the approver approves besides production's text.

A trial (a `DeployRequest` of kind TRIAL) names production Y by its exact text on the host
(`unit_text`, `unit_sha256`, pinned by the approval as for any request) and lists its
candidates (`TrialCandidate` rows). The plan is the ordered list of candidate unit texts
(their sha256s), whether each unit file is kept at the end, and the end action (production
back, or the best candidate left running when it beats production by the approved
threshold). A candidate may take production's unit name: the plan says so, and that
production's approved text is written back after it. It is part of the request's job
settings (`job_settings["trial"]`), whose hash the approval pins (`deploys.job_settings`,
`deploys.approvals`): a candidate row edited after the approval, or a plan that no longer
matches its rows, voids it. (docs/trials.md)
"""

from __future__ import annotations

from typing import Any

from deploys.models import DeployRequest, TrialCandidate
from hostops.channel.push import sha256_hex


def end_action(promote_pct: float | None, in_place: bool = False) -> str:
    """What happens at the end of the trial, in the approver's words. `in_place`: a
    candidate takes production's unit name."""
    if promote_pct is None:
        said = (
            "production is started again and measured; the candidates' unit files are "
            "removed unless kept"
        )
    else:
        said = (
            f"if the best candidate beats production by at least {promote_pct:g}% on every "
            "gated metric it is left running as production (production stays stopped); "
            "otherwise production is started again and measured; the other candidates' unit "
            "files are removed unless kept"
        )
    if in_place:
        said += (
            "; a candidate that takes production's unit name replaces production's file "
            "while it is tried, and production's approved text is written back (and read "
            "back) before production starts again — that file is never removed"
        )
    return said


def takes_production_unit(candidate: TrialCandidate, production_unit: str) -> bool:
    """The candidate runs as production's own unit, in production's file."""
    return candidate.unit_name == production_unit


def candidate_plan(candidates: list[TrialCandidate], production_unit: str) -> list[dict[str, Any]]:
    return [
        {
            "position": c.position,
            "unit": f"{c.unit_name}.service",
            "profile": c.profile_version.profile.name,
            "version": c.profile_version.number,
            "sha256": c.unit_sha256,
            "keep": c.keep,
            # only where true: the plans of other trials stay as they were approved
            **({"takes_production_unit": True} if c.unit_name == production_unit else {}),
        }
        for c in sorted(candidates, key=lambda c: c.position)
    ]


def trial_plan(
    *,
    production_unit: str,
    production_sha256: str,
    candidates: list[TrialCandidate],
    promote_pct: float | None,
) -> dict[str, Any]:
    """The plan as stored in `job_settings["trial"]` (plain JSON, canonical order)."""
    in_place = any(takes_production_unit(c, production_unit) for c in candidates)
    return {
        "production": {"unit": f"{production_unit}.service", "sha256": production_sha256},
        "candidates": candidate_plan(candidates, production_unit),
        "promote_threshold_pct": None if promote_pct is None else float(promote_pct),
        "end": end_action(promote_pct, in_place),
    }


def candidates_of(request: DeployRequest) -> list[TrialCandidate]:
    return list(
        TrialCandidate.objects.filter(request=request)
        .select_related("profile_version__profile")
        .order_by("position")
    )


def plan_of(request: DeployRequest) -> dict[str, Any]:
    """The plan the request's rows give now (compared with the stored, approved one)."""
    return trial_plan(
        production_unit=request.unit_name,
        production_sha256=request.unit_sha256,
        candidates=candidates_of(request),
        promote_pct=request.trial_promote_pct,
    )


def plan_problems(request: DeployRequest) -> list[str]:
    """Why the trial's candidates are not the planned ones (empty: they are): every text
    has the sha256 stored beside it, and the rows give the plan stored with the request."""
    problems = []
    for c in candidates_of(request):
        if sha256_hex(c.unit_text.encode("utf-8")) != c.unit_sha256:
            problems.append(
                f"candidate {c.position} ({c.unit_name}.service): its text is not its sha256"
            )
    if (request.job_settings or {}).get("trial") != plan_of(request):
        problems.append(
            "the trial's candidates, their order or its end action changed since the request"
        )
    return problems


__all__ = [
    "candidates_of",
    "end_action",
    "plan_of",
    "plan_problems",
    "takes_production_unit",
    "trial_plan",
]
