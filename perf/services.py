"""Writes: record a run, compare it with the baseline, accept a run as the baseline;
and the two judgements a trial composes (docs/benchmarks.md, "For trials"):
`measure_until_decided` (more repeats while the gate says noisy, within a time budget;
pure, from servebench.gate, so a GPU script without Django runs the same loop) and
`check_drift` (a reference measured again against its earlier measurement)."""

from __future__ import annotations

import hashlib
import json
import statistics
from typing import Any

from django.db import transaction

from audit.services import record
from perf.models import Baseline, BenchPolicy, BenchRun
from perf.selectors import POLICY_FIELDS, baseline_for
from servebench.gate import Decided, Drift, GateResult, drift, gate, measure_until_decided
from servebench.schema import BenchResult

BASELINE_ACCEPTED = "bench.baseline_accepted"
REGRESSED = "bench.regressed"
# Settings that do not change what is measured (where, who, how patient).
_NOT_COMPARED = ("url", "stall_timeout_s", "repeats", "api_key")


def settings_key(settings: dict[str, Any]) -> str:
    """sha256 of the settings that decide what is measured: equal keys → comparable runs."""
    relevant = {k: v for k, v in sorted(settings.items()) if k not in _NOT_COMPARED}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()


def _summary(result: BenchResult) -> dict[str, float | None]:
    """First concurrency level, median over its repeats."""
    if not result.concurrencies:
        return {}
    levels = [lv for lv in result.repeats_of(result.concurrencies[0]) if lv.completed]
    if not levels:
        return {}
    spec = [lv.spec_decode.acceptance_rate for lv in levels if lv.spec_decode]
    return {
        "output_tok_s": statistics.median(lv.output_throughput for lv in levels),
        "ttft_p50_ms": statistics.median(lv.ttft_ms.median for lv in levels),
        "tpot_p50_ms": statistics.median(lv.tpot_ms.median for lv in levels),
        "acceptance_rate": statistics.median(spec) if spec else None,
    }


def record_run(
    *,
    result: BenchResult,
    profile: Any,
    host: Any,
    profile_version: Any = None,
    request: Any = None,
    url: str = "",
    actor: Any = None,
) -> BenchRun:
    settings = dict(result.settings)
    return BenchRun.objects.create(
        profile=profile,
        profile_version=profile_version,
        host=host,
        request=request,
        engine=result.engine,
        url=url,
        settings=settings,
        settings_key=settings_key(settings),
        result=result.to_dict(),
        incomplete=result.incomplete,
        created_by=actor,
        **_summary(result),
    )


def compare_with_baseline(run: BenchRun, threshold_pct: float) -> GateResult | None:
    """Gate `run` against its (profile, host) baseline and store the verdict on the run.

    None when there is no baseline, or the baseline is this run."""
    baseline = baseline_for(run.profile, run.host)
    if baseline is None or baseline.run_id == run.pk:
        return None
    return gate_against(run, baseline, threshold_pct)


def gate_against(run: BenchRun, baseline: Baseline, threshold_pct: float) -> GateResult:
    """Gate `run` against `baseline` (of any profile: a trial's candidate against
    production's) and store the verdict on the run."""
    verdict = gate(
        BenchResult.from_dict(baseline.run.result), BenchResult.from_dict(run.result), threshold_pct
    )
    run.baseline_run = baseline.run
    run.gate = verdict.to_dict()
    run.verdict = verdict.verdict
    run.save(update_fields=["baseline_run", "gate", "verdict"])
    return verdict


def record_regression(run: BenchRun, verdict: GateResult, *, rollback: bool) -> None:
    """The audit history says why a deploy was judged slower (and whether it is undone)."""
    record(
        kind=REGRESSED,
        actor=None,
        obj=run,
        payload={
            "run": run.pk,
            "baseline_run": run.baseline_run_id,
            "request": run.request_id,
            "threshold_pct": verdict.threshold_pct,
            "reasons": verdict.reasons,
            "rollback": rollback,
        },
        host_name=run.host.name,
        profile_name=run.profile.name,
    )


def accept_baseline(*, run: BenchRun, actor: Any, reason: str) -> Baseline:
    """Make `run` the baseline of its (profile, host); audited with the previous one."""
    if run.incomplete:
        raise ValueError(f"run #{run.pk} is incomplete: an incomplete run cannot be a baseline")
    with transaction.atomic():
        previous = (
            Baseline.objects.select_for_update().filter(profile=run.profile, host=run.host).first()
        )
        old_run = previous.run_id if previous else None
        baseline, _ = Baseline.objects.update_or_create(
            profile=run.profile,
            host=run.host,
            defaults={"run": run, "accepted_by": actor, "reason": reason[:500]},
        )
        record(
            kind=BASELINE_ACCEPTED,
            actor=actor,
            obj=baseline,
            payload={
                "run": run.pk,
                "previous_run": old_run,
                "reason": reason[:500],
                "output_tok_s": run.output_tok_s,
                "tpot_p50_ms": run.tpot_p50_ms,
            },
            host_name=run.host.name,
            profile_name=run.profile.name,
        )
    return baseline


# -- drift of a reference ------------------------------------------------------------------


def check_drift(reference: BenchRun, again: BenchRun, threshold_pct: float) -> Drift:
    """`again` (the reference measured again, e.g. production at the end of a trial)
    against `reference` (its earlier measurement): `Drift.drifted` when any gated metric
    moved, either way, beyond the threshold; `Drift.sentence()` says so in words."""
    return drift(
        BenchResult.from_dict(reference.result), BenchResult.from_dict(again.result), threshold_pct
    )


# -- the benchmark settings of a profile ------------------------------------------------------

POLICY_CHANGED = "bench.policy_changed"


def save_policy(*, policy: BenchPolicy, actor: Any, before: dict[str, Any]) -> BenchPolicy:
    """Save a profile's benchmark settings; the history says who changed what, from what to
    what (the settings are part of every later deploy's approval: deploys.job_settings)."""
    after = {name: getattr(policy, name) for name in POLICY_FIELDS}
    changes = {
        name: {"from": before.get(name), "to": after[name]}
        for name in POLICY_FIELDS
        if before.get(name) != after[name]
    }
    with transaction.atomic():
        policy.save()
        record(
            kind=POLICY_CHANGED,
            actor=actor,
            obj=policy,
            payload={"profile": policy.profile_id, "changes": changes},
            profile_name=policy.profile.name,
        )
    return policy


__all__ = [
    "BASELINE_ACCEPTED",
    "POLICY_CHANGED",
    "REGRESSED",
    "Decided",
    "accept_baseline",
    "check_drift",
    "compare_with_baseline",
    "measure_until_decided",
    "record_regression",
    "record_run",
    "save_policy",
    "settings_key",
]
