"""The deploy pipeline's benchmark step (the hook of deploys/jobs/benchmark.py).

After readiness: measure the new unit with servebench using the baseline's settings (the
profile's policy for a first measurement), store the run, and gate it against the
baseline of (profile, host). A server bound to loopback on an SSH host is measured
through an SSH port forward over the job's connection (perf.reach). Regressed →
`StepResult.regressed` (the runner rolls back when the policy says so, default on);
noisy → success with a note; no baseline yet → this run becomes the baseline (audited).
An incomplete measurement fails the step without a rollback: nothing says the new unit
is worse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deploys.jobs.benchmark import BenchmarkJob
from deploys.jobs.recorder import Recorder
from deploys.jobs.steps import StepResult
from perf.bench_thread import run_beside_the_job
from perf.models import Baseline, BenchPolicy, BenchRun
from perf.reach import Endpoint, ServiceUnreachable, measured_endpoint
from perf.selectors import baseline_for, policy_from_settings
from perf.services import (
    accept_baseline,
    compare_with_baseline,
    record_regression,
    record_run,
)
from servebench.gate import NOISY, REGRESSED
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
    try:
        with measured_endpoint(job.service, ctx.host, lambda: ctx.transport) as endpoint:
            return _measure(job, policy, endpoint)
    except ServiceUnreachable as exc:
        return StepResult.failed(f"benchmark: {exc}")


def _measure(job: BenchmarkJob, policy: BenchPolicy, endpoint: Endpoint) -> StepResult:
    """Run servebench against `endpoint`, store the run, and judge it."""
    assert job.service is not None
    ctx, rec = job.ctx, job.rec
    profile = ctx.request.profile_version.profile
    baseline = baseline_for(profile, ctx.host)
    settings = run_settings(
        policy, baseline.run.settings if baseline else None, endpoint.url, job.service.api_key
    )
    _log_plan(rec, settings, endpoint, baseline)
    try:
        result = run_beside_the_job(settings, _progress_reporter(rec), ctx.cancel_requested)
    except BenchError as exc:
        return StepResult.failed(f"benchmark could not start: {exc}")
    run = record_run(
        result=result,
        profile=profile,
        host=ctx.host,
        profile_version=ctx.request.profile_version,
        request=ctx.request,
        url=endpoint.label,
    )
    rec.log(
        f"measured: {run.output_tok_s or 0:.1f} tok/s, TTFT p50 {run.ttft_p50_ms or 0:.1f} ms, "
        f"TPOT p50 {run.tpot_p50_ms or 0:.2f} ms (run #{run.pk})"
    )
    if result.incomplete:
        return _incomplete(result, run)
    if baseline is None:
        return _first_baseline(job, run)
    return _judge(rec, run, baseline, policy)


def _log_plan(
    rec: Recorder, settings: RunSettings, endpoint: Endpoint, baseline: Baseline | None
) -> None:
    where = endpoint.label
    if endpoint.forwarded:
        where = where.removesuffix(" (SSH port forward)")
        where += f" through an SSH port forward ({endpoint.url} in the worker)"
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


def _incomplete(result: BenchResult, run: BenchRun) -> StepResult:
    """Nothing says the new unit is worse: the step fails without asking for a rollback."""
    errors = "; ".join(f"{n}× {msg}" for lv in result.levels for msg, n in lv.errors.items())
    return StepResult.failed(
        f"benchmark incomplete: {result.error or errors or 'no request completed'}",
        **_figures(run),
    )


def _first_baseline(job: BenchmarkJob, run: BenchRun) -> StepResult:
    accept_baseline(
        run=run,
        actor=None,
        reason=f"first benchmark of this profile on this host (deploy #{job.ctx.request.pk})",
    )
    job.rec.log(f"run #{run.pk} is the baseline of this profile on this host")
    return StepResult.success(baseline="set", **_figures(run))


def _judge(rec: Recorder, run: BenchRun, baseline: Baseline, policy: BenchPolicy) -> StepResult:
    """The regression gate against the baseline: regressed asks for a rollback (policy)."""
    figures = _figures(run)
    verdict = compare_with_baseline(run, policy.threshold_pct)
    if verdict is None:  # cannot happen: the baseline exists and is an earlier run
        return StepResult.success(**figures)
    for reason in verdict.reasons:
        rec.log(reason)
    figures |= {"baseline_run": baseline.run_id, "gate": verdict.verdict}
    if verdict.verdict == REGRESSED:
        record_regression(run, verdict, rollback=policy.rollback_on_regression)
        return StepResult.regressed(
            f"slower than baseline run #{baseline.run_id} (threshold "
            f"{policy.threshold_pct:g}%): " + "; ".join(verdict.reasons),
            rollback=policy.rollback_on_regression,
            **figures,
        )
    if verdict.verdict == NOISY:
        rec.log("the repeats spread as widely as the change: not a regression; more repeats needed")
    return StepResult.success(**figures)
