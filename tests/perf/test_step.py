"""The pipeline's benchmark step against the vLLM double."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from deploys.jobs import benchmark as hook
from deploys.jobs.benchmark import BenchmarkJob
from deploys.jobs.recorder import Recorder
from deploys.jobs.runner import _cancel_checker
from deploys.jobs.steps import Outcome
from deploys.models import DeployRequest, Host
from perf.models import Baseline, BenchPolicy, BenchRun
from perf.reach import needs_forward, worker_url
from perf.services import BASELINE_ACCEPTED, REGRESSED
from perf.step import benchmark_step
from tests.bench.conftest import StartDouble
from tests.perf.conftest import service_at

pytestmark = pytest.mark.django_db
SEED = ("--ttft-ms", "60", "--tokens-per-s", "74")
# the n-gram variant: a speculative config that makes the server 15% slower
NGRAM_15_SLOWER = (
    *SEED,
    "--num-spec-tokens",
    "3",
    "--accepted-per-step",
    "0",
    "--spec-speed-factor",
    "0.85",
)


def test_the_perf_app_installs_its_step_into_the_pipelines_hook() -> None:
    assert hook._implementation is benchmark_step


def test_the_first_measurement_becomes_the_baseline_and_says_so_in_the_history(
    vllm_double: StartDouble, deploy_ctx: Callable[..., BenchmarkJob], small_policy: BenchPolicy
) -> None:
    job = deploy_ctx(vllm_double(*SEED))
    ctx = job.ctx
    result = hook.benchmark(job)
    assert result.outcome == Outcome.OK, result.reason
    assert result.data["baseline"] == "set"
    run = BenchRun.objects.get(pk=result.data["bench_run"])
    assert run.output_tok_s == pytest.approx(74 * 31 / (0.06 * 74 + 31), rel=0.05)
    assert run.tpot_p50_ms == pytest.approx(1000 / 74, rel=0.02)
    assert (run.request, run.host, run.profile_version) == (
        ctx.request,
        ctx.host,
        ctx.request.profile_version,
    )
    assert Baseline.objects.get(profile=small_policy.profile, host=ctx.host).run == run
    event = AuditEvent.objects.get(kind=BASELINE_ACCEPTED)
    assert event.payload["run"] == run.pk and event.payload["previous_run"] is None
    assert "first benchmark" in event.payload["reason"]
    # the history's Object column names them as the pages do, not by database ids
    profile, host = small_policy.profile.name, ctx.host.name
    assert event.object_repr == f"baseline of {profile} on {host}: run #{run.pk}"


def test_the_seeds_ngram_variant_15_percent_slower_is_a_regression_that_asks_for_rollback(
    vllm_double: StartDouble, deploy_ctx: Callable[..., BenchmarkJob], small_policy: BenchPolicy
) -> None:
    assert hook.benchmark(deploy_ctx(vllm_double(*SEED))).ok
    result = hook.benchmark(deploy_ctx(vllm_double(*NGRAM_15_SLOWER)))
    assert result.outcome == Outcome.REGRESSED
    assert result.rollback is True
    assert "Output tokens/s at 1 stream down 1" in result.reason
    assert "TPOT p50 at 1 stream up 1" in result.reason
    run = BenchRun.objects.get(pk=result.data["bench_run"])
    assert run.verdict == BenchRun.Verdict.REGRESSED
    assert run.baseline_run_id == result.data["baseline_run"]
    tpot = next(c for c in run.gate["comparisons"] if c["metric"] == "tpot_p50_ms")
    assert tpot["change_pct"] == pytest.approx(100 / 0.85 - 100, abs=2)
    # the baseline stays what it was, and the history says why the deploy was judged slower
    assert Baseline.objects.get().run_id == result.data["baseline_run"]
    event = AuditEvent.objects.get(kind=REGRESSED)
    assert event.payload["run"] == run.pk and event.payload["rollback"] is True
    assert event.payload["request"] == run.request_id
    assert any(r.startswith("Output tokens/s at 1 stream down") for r in event.payload["reasons"])


def test_a_profile_without_automatic_rollback_still_ends_regressed_but_keeps_the_unit(
    vllm_double: StartDouble, deploy_ctx: Callable[..., BenchmarkJob], small_policy: BenchPolicy
) -> None:
    small_policy.rollback_on_regression = False
    small_policy.save()
    assert hook.benchmark(deploy_ctx(vllm_double(*SEED))).ok
    result = hook.benchmark(deploy_ctx(vllm_double(*NGRAM_15_SLOWER)))
    assert (result.outcome, result.rollback) == (Outcome.REGRESSED, False)


def test_the_same_speed_again_passes_with_the_baselines_settings(
    vllm_double: StartDouble, deploy_ctx: Callable[..., BenchmarkJob], small_policy: BenchPolicy
) -> None:
    # The same double twice: only this machine's noise differs between the runs, and on a
    # loaded machine that alone moves the 60 ms TTFT by ±10% — past the default 5% threshold,
    # and with 2 + 2 repeats all of one side is worse by chance 1 time in 6 (servebench.gate).
    # What this test is about is which settings are compared (asserted below), so the
    # threshold sits far above the noise; the regression tests keep 5% for 15% slowdowns.
    small_policy.threshold_pct = 50
    small_policy.save()
    url = vllm_double(*SEED)
    assert hook.benchmark(deploy_ctx(url)).ok
    small_policy.max_tokens = 64  # a later policy change does not change what is compared
    small_policy.save()
    result = hook.benchmark(deploy_ctx(url))
    assert result.outcome == Outcome.OK, result.reason
    assert result.data["gate"] == "pass"
    first, second = BenchRun.objects.order_by("pk")
    assert result.data["baseline_run"] == first.pk
    assert second.settings["max_tokens"] == first.settings["max_tokens"] == 32
    assert second.settings_key == first.settings_key


def test_the_benchmark_runs_in_a_real_worker_where_the_database_is_refused_inside_event_loops(
    vllm_double: StartDouble,
    deploy_ctx: Callable[..., BenchmarkJob],
    small_policy: BenchPolicy,
) -> None:
    # A qcluster worker refuses ORM calls from async contexts, and so does this test session
    # (tests/test_browser_plugin.py); the job's cancel check and progress both use the database.
    job = deploy_ctx(vllm_double(*SEED))
    ctx = replace(job.ctx, cancel_requested=_cancel_checker(job.ctx.request.pk))
    rec = Recorder(
        on_progress=lambda message: Host.objects.filter(pk=ctx.host.pk).exists() and None
    )
    result = hook.benchmark(BenchmarkJob(ctx, rec, job.service))
    assert result.outcome == Outcome.OK, result.reason


def test_a_cancel_asked_for_during_the_benchmark_stops_it(
    vllm_double: StartDouble,
    deploy_ctx: Callable[..., BenchmarkJob],
    small_policy: BenchPolicy,
) -> None:
    job = deploy_ctx(vllm_double(*SEED))
    DeployRequest.objects.filter(pk=job.ctx.request.pk).update(cancel_requested_at=timezone.now())
    ctx = replace(job.ctx, cancel_requested=_cancel_checker(job.ctx.request.pk))
    result = hook.benchmark(replace(job, ctx=ctx))
    assert result.outcome == Outcome.FAILED
    assert "cancel" in result.reason


def test_an_incomplete_measurement_fails_the_step_without_a_rollback(
    vllm_double: StartDouble, deploy_ctx: Callable[..., BenchmarkJob], small_policy: BenchPolicy
) -> None:
    url = vllm_double(*SEED, "--stream-fault", "http_500", "--stream-fault-after", "3")
    result = hook.benchmark(deploy_ctx(url))
    assert (result.outcome, result.rollback) == (Outcome.FAILED, False)
    assert "benchmark incomplete: " in result.reason and "HTTP 500" in result.reason
    assert BenchRun.objects.get().incomplete
    assert not Baseline.objects.exists()


def test_a_server_that_cannot_be_reached_fails_the_step_with_the_reason(
    deploy_ctx: Callable[..., BenchmarkJob], small_policy: BenchPolicy
) -> None:
    result = hook.benchmark(deploy_ctx("http://127.0.0.1:9"))
    assert result.outcome == Outcome.FAILED
    assert result.reason.startswith("benchmark could not start: cannot connect to the server")


def test_switched_off_benchmarks_are_skipped(
    deploy_ctx: Callable[..., BenchmarkJob], small_policy: BenchPolicy
) -> None:
    small_policy.enabled = False
    small_policy.save()
    result = hook.benchmark(deploy_ctx("http://127.0.0.1:9"))
    assert result.outcome == Outcome.SKIPPED


def test_a_loopback_only_server_on_an_ssh_host_is_reached_through_a_forward() -> None:
    """No connection is made: the URL alone (an SSH host at a documentation address)."""
    host = Host(name="h", address="192.0.2.10", transport=Host.Transport.SSH)
    everywhere = service_at("http://127.0.0.1:8001")
    assert worker_url(everywhere, host) == "http://192.0.2.10:8001"
    assert not needs_forward(everywhere, host)
    loopback_only = replace(everywhere, argv=("vllm", "serve", "m", "--host", "127.0.0.1"))
    assert needs_forward(loopback_only, host)  # tests/perf/test_forward.py: the forward itself
    local = Host(name="l", address="192.0.2.10", transport=Host.Transport.LOCAL)
    assert not needs_forward(loopback_only, local)
    assert worker_url(loopback_only, local) == "http://127.0.0.1:8001"


def test_the_step_follows_the_policy_the_request_was_approved_with(
    deploy_ctx: Callable[..., BenchmarkJob], small_policy: BenchPolicy
) -> None:
    small_policy.enabled = False
    small_policy.save()
    ctx = deploy_ctx("http://127.0.0.1:9")  # requested (and pinned) with benchmarks off …
    small_policy.enabled = True
    small_policy.save()  # … switched on later: the job still does what was approved
    result = hook.benchmark(ctx)
    assert (result.outcome, result.reason) == (
        Outcome.SKIPPED,
        "benchmarks are switched off for this profile",
    )
