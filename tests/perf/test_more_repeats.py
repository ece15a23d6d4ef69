"""A verdict that survives a noisy machine: more repeats while the gate says noisy,
within the policy's time budget, and a reference's drift check (perf.services)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from deploys.jobs import benchmark as hook
from deploys.jobs.benchmark import BenchmarkJob
from deploys.jobs.steps import Outcome
from perf.models import BenchPolicy, BenchRun
from perf.services import accept_baseline, check_drift, measure_until_decided, record_run
from servebench.gate import NOISY, REGRESSED
from servebench.runner import RunSettings, run_sync
from servebench.schema import BenchResult
from tests.bench.conftest import StartDouble
from tests.bench.test_results import _run
from tests.perf.factories import stored_run

pytestmark = pytest.mark.django_db


class Clock:
    """Each measurement takes `per_repeat` seconds of this clock per repeat."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def scripted(
    clock: Clock, values: list[float], per_repeat: float = 10.0
) -> Callable[[int], BenchResult]:
    """`measure(n)`: the next n of `values` as repeats, advancing the clock."""
    left = list(values)

    def measure(n: int) -> BenchResult:
        taken, left[:] = left[:n], left[n:]
        clock.now += per_repeat * n
        return _run(taken)

    return measure


def test_a_noisy_verdict_is_measured_again_until_it_is_decided() -> None:
    clock = Clock()
    # the H200's noisy run: one lucky candidate repeat among slow ones
    decided = measure_until_decided(
        baseline=_run([91.6, 89.3, 90.5]),
        first=_run([61.0, 96.3]),
        first_s=20.0,
        measure=scripted(clock, [62.5, 63.0, 60.8, 64.1, 62.2, 61.7]),
        threshold_pct=5.0,
        budget_s=300.0,
        clock=clock,
    )
    assert decided.verdict.verdict == REGRESSED
    assert decided.added_repeats == 6 and decided.rounds == 4
    assert decided.stopped == "decided (regressed)"
    assert decided.spent_s == pytest.approx(60.0)
    assert decided.log[0].startswith("noisy after 2 repeats: measuring 2 more")
    assert decided.verdict.sure


def test_the_time_budget_ends_the_repeats_and_says_so() -> None:
    clock = Clock()
    decided = measure_until_decided(
        baseline=_run([91.6, 89.3, 90.5]),
        first=_run([61.0, 96.3]),
        first_s=20.0,
        measure=scripted(clock, [62.5, 63.0, 60.8, 64.1]),
        threshold_pct=5.0,
        budget_s=25.0,  # two more repeats of 10 s fit, then nothing
        clock=clock,
    )
    assert decided.verdict.verdict == NOISY
    assert decided.added_repeats == 2
    assert decided.stopped.startswith("still noisy: the 25 s budget for more repeats")


def test_no_budget_means_no_more_repeats() -> None:
    decided = measure_until_decided(
        baseline=_run([91.6, 89.3]),
        first=_run([61.0, 96.3]),
        first_s=20.0,
        measure=lambda n: pytest.fail("measured although the budget is 0"),
        threshold_pct=5.0,
        budget_s=0.0,
    )
    assert (decided.verdict.verdict, decided.added_repeats) == (NOISY, 0)
    assert decided.stopped == "still noisy: no time budget for more repeats"


def test_an_incomplete_round_keeps_the_repeats_measured_before_it() -> None:
    broken = _run([60.0])
    broken.incomplete, broken.error = True, "cancelled"
    decided = measure_until_decided(
        baseline=_run([91.6, 89.3, 90.5]),
        first=_run([61.0, 96.3]),
        first_s=20.0,
        measure=lambda n: broken,
        threshold_pct=5.0,
        budget_s=300.0,
    )
    assert decided.stopped == "incomplete" and len(decided.result.levels) == 2


def test_the_step_measures_more_repeats_while_noisy_within_the_policy_budget(
    vllm_double: StartDouble, deploy_ctx: Callable[..., BenchmarkJob], small_policy: BenchPolicy
) -> None:
    # A baseline measured on a noisy machine: one repeat at 74 tok/s, one at 54.
    fast, slow = vllm_double("--tokens-per-s", "74"), vllm_double("--tokens-per-s", "54")
    settings = {"prompts": "chat", "max_tokens": 32, "num_requests": 4, "concurrency": [1]}
    base = run_sync(RunSettings(url=fast, **settings)).with_more_repeats(
        run_sync(RunSettings(url=slow, **settings))
    )
    job = deploy_ctx(vllm_double("--tokens-per-s", "58"))
    profile = job.ctx.request.profile_version.profile
    accept_baseline(
        run=record_run(result=base, profile=profile, host=job.ctx.host), actor=None, reason="noisy"
    )
    small_policy.noisy_budget_s = 6  # about two more repeats of ~2.3 s
    small_policy.save()
    job = deploy_ctx(vllm_double("--tokens-per-s", "58"))
    result = hook.benchmark(job)
    assert result.outcome == Outcome.OK, result.reason
    assert result.data["gate"] == NOISY
    assert result.data["added_repeats"] >= 1
    run = BenchRun.objects.get(pk=result.data["bench_run"])
    assert run.settings["repeats"] == 2 + result.data["added_repeats"]
    log = "\n".join(job.rec.lines)
    assert "noisy after 2 repeats: measuring" in log
    assert "still noisy" in log and "how sure: noisy:" in log
    assert result.data["summary"].startswith("not decided: ")


def test_a_reference_measured_again_tells_whether_the_machine_drifted(
    profile: object, host: object
) -> None:
    first = stored_run(profile, host, 74.0, seed=0)
    same = stored_run(profile, host, 74.2, seed=0)  # the same TTFT samples
    slower = stored_run(profile, host, 66.0, seed=0)
    assert not check_drift(first, same, 5.0).drifted
    moved = check_drift(first, slower, 5.0)
    assert moved.drifted and "their verdicts are unreliable" in moved.sentence()


def test_a_noisy_baseline_that_can_be_measured_again_grows_with_the_candidate() -> None:
    clock = Clock()
    # the H200's c=8 baseline: 128.2 / 83.3 tok/s; the variant steady near 90
    decided = measure_until_decided(
        baseline=_run([128.2, 83.3]),
        first=_run([90.0, 89.0]),
        first_s=20.0,
        measure=scripted(clock, [90.5, 89.4, 90.2, 88.9]),
        measure_baseline=scripted(clock, [127.0, 126.1, 128.8, 125.5]),
        threshold_pct=5.0,
        budget_s=300.0,
        clock=clock,
    )
    assert decided.verdict.verdict == REGRESSED
    assert decided.baseline is not None and len(decided.baseline.levels) == 6
    assert len(decided.result.levels) == 6


def test_a_regression_not_yet_sure_is_confirmed_before_it_counts() -> None:
    clock = Clock()
    decided = measure_until_decided(
        baseline=_run([74.0, 74.2]),
        first=_run([62.9, 63.0]),  # apart, but 2 + 2 repeats: a 1-in-6 chance
        first_s=20.0,
        measure=scripted(clock, [62.8, 63.1, 62.7, 63.3]),
        threshold_pct=5.0,
        budget_s=300.0,
        clock=clock,
    )
    assert decided.verdict.verdict == REGRESSED and decided.verdict.sure
    assert decided.log[0].startswith("not sure yet after 2 repeats: measuring 2 more")
    assert decided.added_repeats == 4  # 2 rounds of 2: 2 against 6 repeats apart, 1 in 28
