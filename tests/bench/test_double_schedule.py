"""The vLLM double's emission schedule: the truth the benchmark accuracy tests measure against."""

from __future__ import annotations

import pytest

from tests.doubles.vllm_double_schedule import (
    Chunk,
    accepted_tokens_per_step,
    plan_chunks,
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
    assert accepted_tokens_per_step(4, None) == 2
    assert accepted_tokens_per_step(4, 9) == 4
    itl = step_interval_s(itl_ms=10, tokens_per_s=60, num_speculative_tokens=4, accepted_per_step=2)
    assert itl == pytest.approx(3 / 60)
    chunks = plan_chunks(10, ttft_s=0.05, itl_s=itl, num_speculative_tokens=4, accepted_per_step=2)
    assert [c.tokens for c in chunks] == [1, 3, 3, 3]
    truth = true_timings(chunks)
    assert truth.tpot_s == pytest.approx(1 / 60)
    assert truth.chunks == 4


def test_the_spec_speed_factor_slows_only_servers_with_a_speculative_config() -> None:
    plain = step_interval_s(
        itl_ms=10, tokens_per_s=74, num_speculative_tokens=0, spec_speed_factor=0.85
    )
    spec = step_interval_s(
        itl_ms=10,
        tokens_per_s=74,
        num_speculative_tokens=3,
        accepted_per_step=0,
        spec_speed_factor=0.85,
    )
    assert plain == pytest.approx(1 / 74)
    assert 1 / spec == pytest.approx(74 * 0.85)


def test_without_a_rate_the_step_interval_is_itl_ms() -> None:
    assert step_interval_s(itl_ms=7, tokens_per_s=0, num_speculative_tokens=0) == 0.007


def test_a_single_token_answer_has_no_tpot() -> None:
    truth = true_timings([Chunk(at_s=0.2, tokens=1, drafts=0, draft_tokens=0, accepted=0)])
    assert (truth.ttft_s, truth.tpot_s, truth.e2el_s) == (0.2, 0.0, 0.2)
