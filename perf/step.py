"""The deploy pipeline's benchmark step (the hook of deploys/jobs/benchmark.py).

After readiness: measure the new unit with servebench using the baseline's settings (the
profile's policy for a first measurement), store the run, and gate it against the
baseline of (profile, host). On an SSH host the client runs on the host as the unit's
user (perf.client, perf.onhost); where it cannot, from the worker, through an SSH port
forward for a server bound to loopback (perf.reach), the reason logged and stored.
Not sure yet (noisy, or a regression that few repeats could show by chance) → more
repeats within the policy's budget (perf.services.measure_until_decided);
regressed → `StepResult.regressed` (the runner rolls back when the policy says so, default
on); still noisy → success with a note; no baseline yet → this run becomes the baseline
(audited). The result's `summary` says it in words for the job page's step header.
An incomplete measurement fails the step without a rollback: nothing says the new unit
is worse.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from deploys.jobs.benchmark import CANDIDATE, CONFIRM, REFERENCE, BenchmarkJob
from deploys.jobs.recorder import Recorder
from deploys.jobs.steps import StepResult
from perf.client import Client, benchmark_client
from perf.models import Baseline, BenchPolicy, BenchRun
from perf.reach import ServiceUnreachable
from perf.selectors import baseline_for, policy_from_settings
from perf.services import (
    Decided,
    accept_baseline,
    check_drift,
    compare_with_baseline,
    gate_against,
    measure_until_decided,
    record_regression,
    record_run,
)
from servebench.gate import NOISY, REGRESSED, headline, verdict_certainty
from servebench.names import metric_name, streams
from servebench.runner import BenchError, Progress, RunSettings
from servebench.schema import BenchResult

# RunSettings fields taken from a stored run's settings (what was measured, not where).
_REUSED = (
    "endpoint",
    "prompts",
    "seed",
    "max_tokens",
    "ignore_eos",
    "concurrency",
    "num_requests",
    "duration_s",
    "warmup",
    "request_rate",
    "stall_timeout_s",
)


def run_settings(
    policy: BenchPolicy, baseline_settings: dict[str, Any] | None, url: str, api_key: str
) -> RunSettings:
    """The baseline's settings when there is one, else the policy's; repeats from the policy."""
    if baseline_settings:
        chosen = {k: baseline_settings[k] for k in _REUSED if k in baseline_settings}
    else:
        chosen = {
            "endpoint": policy.endpoint,
            "prompts": policy.prompts,
            "seed": policy.seed,
            "max_tokens": policy.max_tokens,
            "concurrency": list(policy.concurrency or [1]),
            "num_requests": policy.num_requests,
        }
    return RunSettings(url=url, api_key=api_key or None, repeats=policy.repeats, **chosen)


def _figures(run: BenchRun) -> dict[str, Any]:
    return {
        "bench_run": run.pk,
        "output_tok_s": run.output_tok_s,
        "ttft_p50_ms": run.ttft_p50_ms,
        "tpot_p50_ms": run.tpot_p50_ms,
        "acceptance_rate": run.acceptance_rate,
    }


def benchmark_step(job: BenchmarkJob) -> StepResult:
    ctx = job.ctx
    version = ctx.request.profile_version
    # The policy the approver approved (stored with the request), not today's.
    policy = policy_from_settings(version.profile, ctx.request.job_settings.get("benchmark"))
    if not policy.enabled:
        return StepResult.skipped("benchmarks are switched off for this profile")
    if job.service is None:
        return StepResult.skipped("the unit runs no vLLM server that could be measured")
    service = job.service
    try:
        with benchmark_client(
            service,
            ctx.host,
            lambda: ctx.transport,
            ctx.request.unit_text,
            on_host=policy.client_on_host,
        ) as client:
            return _measure(job, policy, client)
    except ServiceUnreachable as exc:
        return StepResult.failed(f"benchmark: {exc}")


def _reference_profile(job: BenchmarkJob) -> Any:
    """Whose baseline the measurement is compared with: production's for a trial's
    candidate, else the measured unit's own profile."""
    if job.role == CANDIDATE and job.against is not None:
        return job.against.profile
    return job.ctx.request.profile_version.profile


def _measure(job: BenchmarkJob, policy: BenchPolicy, client: Client) -> StepResult:
    """Measure with `client` (more repeats while not sure), store the run, and judge it."""
    assert job.service is not None
    ctx, rec = job.ctx, job.rec
    profile = ctx.request.profile_version.profile
    baseline = baseline_for(_reference_profile(job), ctx.host)
    if job.role == REFERENCE and baseline is not None:
        rec.log(f"production's baseline on {ctx.host.name} is run #{baseline.run_id}")
        return StepResult.skipped(
            f"production has a baseline here (run #{baseline.run_id}): it is the reference",
            baseline_run=baseline.run_id,
            output_tok_s=baseline.run.output_tok_s,
        )
    if job.role == CANDIDATE and baseline is None:
        return StepResult.failed("production has no baseline on this host to compare with")
    settings = run_settings(
        policy, baseline.run.settings if baseline else None, client.url, job.service.api_key
    )
    _log_plan(rec, settings, client, baseline)
    progress = _progress_reporter(rec)
    started = time.monotonic()
    try:
        result = client.measure(settings, progress, ctx.cancel_requested)
    except BenchError as exc:
        return StepResult.failed(f"benchmark could not start: {exc}", **_where(client))
    decided = None
    if baseline is not None and not result.incomplete and job.role != CONFIRM:
        decided = measure_until_decided(
            baseline=BenchResult.from_dict(baseline.run.result),
            first=result,
            first_s=time.monotonic() - started,
            measure=lambda n: client.measure(
                replace(settings, repeats=n, warmup=0), progress, ctx.cancel_requested
            ),
            threshold_pct=policy.threshold_pct,
            budget_s=float(policy.noisy_budget_s),
            log=rec.log,
        )
        result = decided.result
    run = record_run(
        result=result,
        profile=profile,
        host=ctx.host,
        profile_version=ctx.request.profile_version,
        request=ctx.request,
        url=client.label,
    )
    rec.log(
        f"measured: {run.output_tok_s or 0:.1f} tok/s, TTFT p50 {run.ttft_p50_ms or 0:.1f} ms, "
        f"TPOT p50 {run.tpot_p50_ms or 0:.2f} ms (run #{run.pk})"
    )
    if result.incomplete:
        return _incomplete(result, run, client)
    if baseline is None:
        return _first_baseline(job, run, client)
    if job.role == CONFIRM:
        return _confirm(rec, run, baseline, policy, client)
    if job.role == CANDIDATE:
        return _judge_candidate(rec, run, baseline, policy, client, decided)
    return _judge(rec, run, baseline, policy, client, decided)


def _where(client: Client) -> dict[str, Any]:
    """Where the client ran, for the step's result (and the fallback's reason)."""
    return {"client": "host" if client.on_host else "worker", "client_fallback": client.fallback}


def _log_plan(
    rec: Recorder, settings: RunSettings, client: Client, baseline: Baseline | None
) -> None:
    if client.fallback:
        rec.log(f"client in the worker, not on the host: {client.fallback}")
    where = client.where
    rec.log(
        f"benchmark {where}: concurrency {settings.concurrency}, {settings.num_requests} "
        f"requests × {settings.max_tokens} tokens, {settings.repeats} repeats, prompts "
        f"{settings.prompts} (seed {settings.seed}); "
        + (f"baseline run #{baseline.run_id}" if baseline else "no baseline yet")
    )


def _progress_reporter(rec: Recorder) -> Callable[[Progress], None]:
    def progress(p: Progress) -> None:
        rec.progress(
            f"benchmark: repeat {p.repeat + 1}/{p.repeats}, concurrency {p.concurrency}: "
            f"{p.done}/{p.total or '?'} requests"
        )

    return progress


def _incomplete(result: BenchResult, run: BenchRun, client: Client) -> StepResult:
    """Nothing says the new unit is worse: the step fails without asking for a rollback."""
    errors = "; ".join(f"{n}× {msg}" for lv in result.levels for msg, n in lv.errors.items())
    return StepResult.failed(
        f"benchmark incomplete: {result.error or errors or 'no request completed'}",
        **_figures(run),
        **_where(client),
    )


def _fallback_note(client: Client) -> str:
    """Said in the step header when the client fell back to the worker."""
    if client.fallback:
        return " (measured from the worker: the client could not run on the host)"
    return ""


def _first_baseline(job: BenchmarkJob, run: BenchRun, client: Client) -> StepResult:
    why = "trial" if job.role in (REFERENCE, CONFIRM) else "deploy"
    accept_baseline(
        run=run,
        actor=None,
        reason=f"first benchmark of this profile on this host ({why} #{job.ctx.request.pk})",
    )
    job.rec.log(f"run #{run.pk} is the baseline of this profile on this host")
    first = BenchResult.from_dict(run.result).concurrencies
    summary = (
        f"first measurement here: {run.output_tok_s or 0:.1f} tok/s at "
        f"{streams(first[0] if first else 1)}, now the baseline" + _fallback_note(client)
    )
    return StepResult.success(baseline="set", summary=summary, **_figures(run), **_where(client))


def _judge(
    rec: Recorder,
    run: BenchRun,
    baseline: Baseline,
    policy: BenchPolicy,
    client: Client,
    decided: Decided | None,
) -> StepResult:
    """The regression gate against the baseline: regressed asks for a rollback (policy)."""
    figures = _figures(run) | _where(client)
    verdict = compare_with_baseline(run, policy.threshold_pct)
    if verdict is None:  # cannot happen: the baseline exists and is an earlier run
        return StepResult.success(**figures)
    for reason in verdict.reasons:
        rec.log(reason)
    certainty = verdict_certainty(verdict)
    rec.log(f"how sure: {certainty}")
    figures |= {
        "baseline_run": baseline.run_id,
        "gate": verdict.verdict,
        "summary": headline(verdict) + _fallback_note(client),
        "certainty": certainty,
        "added_repeats": decided.added_repeats if decided else 0,
        "more_repeats_s": round(decided.spent_s, 1) if decided else 0.0,
    }
    if verdict.verdict == REGRESSED:
        record_regression(run, verdict, rollback=policy.rollback_on_regression)
        return StepResult.regressed(
            f"slower than baseline run #{baseline.run_id} (threshold "
            f"{policy.threshold_pct:g}%): " + "; ".join(verdict.reasons),
            rollback=policy.rollback_on_regression,
            **figures,
        )
    if verdict.verdict == NOISY:
        rec.log(
            "the repeats spread as widely as the change: not a regression"
            + (f"; {decided.stopped}" if decided else "")
        )
    return StepResult.success(**figures)


def change_said(metric: str, concurrency: int | None, change_pct: float) -> str:
    """ "TPOT p50 at 1 stream 12.0% better" (the gate's change_pct is positive when worse)."""
    better = "worse" if change_pct > 0 else "better"
    return f"{metric_name(metric)} at {streams(concurrency)} {abs(change_pct):.1f}% {better}"


def _judge_candidate(
    rec: Recorder,
    run: BenchRun,
    baseline: Baseline,
    policy: BenchPolicy,
    client: Client,
    decided: Decided | None,
) -> StepResult:
    """A trial's candidate against production's baseline on the host: its verdict in
    words ("14.7% slower than production at 1 stream"); slower is `regressed` (the trial
    records it and goes on; nothing is rolled back by this step)."""
    verdict = gate_against(run, baseline, policy.threshold_pct)
    for reason in verdict.reasons:
        rec.log(reason)
    certainty = verdict_certainty(verdict)
    rec.log(f"how sure: {certainty}")
    figures = _figures(run) | _where(client)
    figures |= {
        "baseline_run": baseline.run_id,
        "baseline_tok_s": baseline.run.output_tok_s,
        "gate": verdict.verdict,
        "summary": headline(verdict, "production") + _fallback_note(client),
        "certainty": certainty,
        "changes": [
            {
                "metric": c.metric,
                "concurrency": c.concurrency,
                "change_pct": c.change_pct,
                "said": change_said(c.metric, c.concurrency, c.change_pct),
            }
            for c in verdict.comparisons
        ],
        "added_repeats": decided.added_repeats if decided else 0,
    }
    if verdict.verdict == REGRESSED:
        return StepResult.regressed(
            f"slower than production's baseline run #{baseline.run_id}: "
            + "; ".join(verdict.reasons),
            rollback=False,
            **figures,
        )
    return StepResult.success(**figures)


def _confirm(
    rec: Recorder, run: BenchRun, baseline: Baseline, policy: BenchPolicy, client: Client
) -> StepResult:
    """Production measured again at the end of a trial: its speed, whether it came back
    slower than its baseline (loud on the job page, never a failure: it is what runs), and
    whether the machine drifted while the candidates ran."""
    verdict = gate_against(run, baseline, policy.threshold_pct)
    moved = check_drift(baseline.run, run, policy.threshold_pct)
    rec.log(moved.sentence())
    slower = verdict.verdict == REGRESSED
    if slower:
        rec.log("PRODUCTION CAME BACK SLOWER THAN ITS BASELINE: " + "; ".join(verdict.reasons))
    return StepResult.success(
        **_figures(run),
        **_where(client),
        baseline_run=baseline.run_id,
        baseline_tok_s=baseline.run.output_tok_s,
        gate=verdict.verdict,
        slower=slower,
        drifted=moved.drifted,
        drift=moved.sentence(),
        summary=(
            f"production back at {run.output_tok_s or 0:.1f} tok/s"
            + (f", SLOWER than its baseline: {headline(verdict)}" if slower else "")
        ),
    )
