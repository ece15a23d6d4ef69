"""A trial's results (a DeployRequest of kind trial): each candidate's benchmark beside
production's baseline on the trial's host, built with `perf.trial_results.compare_on_host`
as "compare these versions on host H" is, with the candidates named as the job page names
them ("n-gram k=5") and the load time each one's own readiness measured in the trial.
Candidates the trial did not measure (rejected, failed before the benchmark, not tried)
are listed with their outcome. Read-only."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deploys.jobs.trial import candidate_labels
from deploys.models import DeployRequest, JobStep, TrialCandidate
from deploys.trials import candidates_of
from perf.models import BenchRun
from perf.selectors import baseline_for
from perf.trial_results import HostComparison, compare_on_host


@dataclass(frozen=True)
class Unmeasured:
    """A candidate without a benchmark run in the trial, and why."""

    label: str
    candidate: TrialCandidate


@dataclass
class TrialResults:
    deploy: DeployRequest
    comparison: HostComparison
    unmeasured: list[Unmeasured] = field(default_factory=list)


def _run_id(figures: dict[str, Any] | None, key: str) -> int | None:
    value = (figures or {}).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _reference(deploy: DeployRequest, candidates: list[TrialCandidate]) -> BenchRun | None:
    """The baseline the candidates were gated against (their figures name it), else the
    run the reference step measured or named, else production's baseline on the host now."""
    ids = [_run_id(c.figures, "baseline_run") for c in candidates]
    step = (
        JobStep.objects.filter(request=deploy, name="reference_benchmark").order_by("-pk").first()
    )
    if step is not None:
        ids += [_run_id(step.result, "baseline_run"), _run_id(step.result, "bench_run")]
    for run_id in (i for i in ids if i is not None):
        run = BenchRun.objects.filter(pk=run_id).select_related("profile").first()
        if run is not None:
            return run
    found = baseline_for(deploy.profile_version.profile, deploy.host)
    return found.run if found else None


def _loads(deploy: DeployRequest) -> dict[int, float]:
    """By trial position (0: production), seconds from start to /health of its newest
    readiness in this trial."""
    out: dict[int, float] = {}
    steps = JobStep.objects.filter(
        request=deploy, name="readiness", status=JobStep.Status.SUCCEEDED
    ).order_by("pk")
    for step in steps:
        value = (step.result or {}).get("ready_after_s")
        if step.trial_position is not None and isinstance(value, (int, float)) and value > 0:
            out[step.trial_position] = float(value)
    return out


def trial_results(deploy: DeployRequest) -> TrialResults:
    """The trial's candidates against production's baseline on its host."""
    candidates = candidates_of(deploy)
    labels = candidate_labels(candidates)
    loads = _loads(deploy)
    reference = _reference(deploy, candidates)
    runs: list[BenchRun] = []
    names: dict[int, str] = {}
    run_loads: dict[int, float | None] = {}
    unmeasured = []
    for c in candidates:
        run_id = _run_id(c.figures, "bench_run")
        run = (
            BenchRun.objects.filter(pk=run_id, host=deploy.host)
            .select_related("profile", "profile_version", "host", "request")
            .first()
            if run_id is not None
            else None
        )
        if run is None:
            unmeasured.append(Unmeasured(labels[c.position], c))
            continue
        runs.append(run)
        names[run.pk] = labels[c.position]
        run_loads[run.pk] = loads.get(c.position)
    if reference is not None:
        names[reference.pk] = deploy.unit_name
        run_loads[reference.pk] = loads.get(0)
    comparison = compare_on_host(
        deploy.host, reference, runs, reference_name="production", names=names, loads=run_loads
    )
    return TrialResults(deploy, comparison, unmeasured)


__all__ = ["TrialResults", "Unmeasured", "trial_results"]
