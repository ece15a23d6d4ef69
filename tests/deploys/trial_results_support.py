"""A finished seed-style trial with benchmark runs behind it: production's baseline on the
host and the n-gram k=5 candidate measured slower (as perf.step records a candidate's run:
for its own profile, tied to the trial, named in its figures), and each unit's load time
on its readiness step. The trial itself runs on `trial_support`'s in-memory host."""

from __future__ import annotations

from deploys.models import DeployRequest, JobStep
from perf.models import BenchRun
from perf.services import accept_baseline, record_run
from tests.deploys.trial_support import TrialSide
from tests.doubles.trial_host import PRODUCTION_TOK_S
from tests.perf.factories import synthetic_result

NGRAM = "vllm-kimi-k25-int4-ngram"
PER_POSITION = [0.31, 0.12, 0.05, 0.02, 0.01]
LOADS = {0: 41.0, 1: 44.0}  # seconds to /health, by trial position


def _candidate_run(side: TrialSide, trial: DeployRequest, tok_s: float, seed: int) -> BenchRun:
    candidate = trial.candidates.get()
    result = synthetic_result(tok_s, accept=5.9, seed=seed)
    for level in result.levels:
        assert level.spec_decode is not None
        level.spec_decode.per_position_acceptance_rates = list(PER_POSITION)
    return record_run(
        result=result,
        profile=candidate.profile_version.profile,
        host=side.host,
        profile_version=candidate.profile_version,
        request=trial,
    )


def finished_seed_trial(side: TrialSide) -> DeployRequest:
    """n-gram k=5 tried in place of production, 14.7% slower (its run as the job header
    says it); production restored."""
    trial = side.run(side.request(side.candidate(NGRAM)))
    production = record_run(
        result=synthetic_result(PRODUCTION_TOK_S, seed=0),
        profile=side.production.profile,
        host=side.host,
        profile_version=side.production,
    )
    accept_baseline(run=production, actor=None, reason="production before the trial")
    run = _candidate_run(side, trial, PRODUCTION_TOK_S * 0.8435, seed=1)
    candidate = trial.candidates.get()
    candidate.figures = {**candidate.figures, "bench_run": run.pk, "baseline_run": production.pk}
    candidate.save(update_fields=["figures"])
    for step in JobStep.objects.filter(request=trial, name="readiness"):
        if step.trial_position in LOADS:
            step.result = {**step.result, "ready_after_s": LOADS[step.trial_position]}
            step.save(update_fields=["result"])
    return trial


__all__ = ["LOADS", "NGRAM", "PER_POSITION", "finished_seed_trial"]
