"""The vLLM double's emission schedule: the truth the benchmark accuracy tests measure against."""

from __future__ import annotations

import pytest

from tests.doubles.vllm_double_schedule import (
    Chunk,
    accepted_tokens_per_step,
    plan_chunks,
    speculative_speedup,
    step_interval_s,
    true_timings,
)


@pytest.mark.parametrize("rate", [20.0, 74.0, 200.0])
def test_a_configured_rate_gives_that_many_tokens_per_second_per_stream(rate: float) -> None:
    itl = step_interval_s(itl_ms=10, tokens_per_s=rate, num_speculative_tokens=0)
    chunks = plan_chunks(101, ttft_s=0.1, itl_s=itl)
    truth = true_timings(chunks)
    assert truth.tpot_s == pytest.approx(1 / rate)
    assert truth.ttft_s == pytest.approx(0.1)
    assert truth.output_tokens == 101


def test_with_spec_decoding_a_step_emits_the_accepted_tokens_plus_the_bonus_token() -> None:
    assert accepted_tokens_per_step(4, 9) == 4
    itl = step_interval_s(itl_ms=10, tokens_per_s=60, num_speculative_tokens=4, draft_overhead=0.25)
    assert itl == pytest.approx(2 / 60)  # 4 draft tokens at 25% each: a step twice as long
    chunks = plan_chunks(10, ttft_s=0.05, itl_s=itl, num_speculative_tokens=4, accepted_per_step=2)
    assert [c.tokens for c in chunks] == [1, 3, 3, 3]
    truth = true_timings(chunks)
    assert truth.tpot_s == pytest.approx(2 / 60 / 3)
    assert truth.chunks == 4


def test_by_default_few_draft_tokens_are_accepted_and_each_costs_step_time() -> None:
    assert accepted_tokens_per_step(5, None) == pytest.approx(0.3)  # 6% of 5
    chunks = plan_chunks(31, ttft_s=0, itl_s=1, num_speculative_tokens=5)
    # 0.3 accepted per step, spread evenly: 3 of every 10 steps carry a second token
    assert [c.accepted for c in chunks[1:11]] == [0, 0, 0, 1, 0, 0, 1, 0, 0, 1]
    long = plan_chunks(3001, ttft_s=0, itl_s=1, num_speculative_tokens=5)
    assert sum(c.accepted for c in long) / sum(c.draft_tokens for c in long) == (
        pytest.approx(0.06, abs=0.001)
    )


@pytest.mark.parametrize(("k", "slower_pct"), [(3, 9.2), (5, 13.3), (8, 17.8)])
def test_by_default_ngram_is_slower_than_no_speculation_as_the_seed_found(
    k: int, slower_pct: float
) -> None:
    """The seed measured n-gram 9-26% slower on reasoning output."""
    plain = step_interval_s(itl_ms=10, tokens_per_s=0, num_speculative_tokens=0)
    spec = step_interval_s(itl_ms=10, tokens_per_s=0, num_speculative_tokens=k)
    chunks = plan_chunks(1001, ttft_s=0, itl_s=spec, num_speculative_tokens=k)
    speed = (1001 - 1) / (chunks[-1].at_s - chunks[0].at_s)
    assert (1 - speed * plain) * 100 == pytest.approx(slower_pct, abs=0.3)
    assert (1 - speculative_speedup(k)) * 100 == pytest.approx(slower_pct, abs=0.1)


def test_a_high_acceptance_makes_speculation_pay_off() -> None:
    assert speculative_speedup(4, 3) == pytest.approx(4 / 1.4)
    assert speculative_speedup(4, acceptance_rate=0.75, draft_overhead=0.05) > 2


def test_the_spec_speed_factor_slows_only_servers_with_a_speculative_config() -> None:
    plain = step_interval_s(
        itl_ms=10, tokens_per_s=74, num_speculative_tokens=0, spec_speed_factor=0.85
    )
    spec = step_interval_s(
        itl_ms=10,
        tokens_per_s=74,
        num_speculative_tokens=3,
        spec_speed_factor=0.85,
        draft_overhead=0,
    )
    assert plain == pytest.approx(1 / 74)
    assert 1 / spec == pytest.approx(74 * 0.85)


def test_without_a_rate_the_step_interval_is_itl_ms() -> None:
    assert step_interval_s(itl_ms=7, tokens_per_s=0, num_speculative_tokens=0) == 0.007


def test_a_single_token_answer_has_no_tpot() -> None:
    truth = true_timings([Chunk(at_s=0.2, tokens=1, drafts=0, draft_tokens=0, accepted=0)])
    assert (truth.ttft_s, truth.tpot_s, truth.e2el_s) == (0.2, 0.0, 0.2)
