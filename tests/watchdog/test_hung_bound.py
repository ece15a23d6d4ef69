"""A hung engine is found within the window + one period + the checks' own lag, whatever
each check's lag (hypothesis): `watchdog.checks.check_hung` over readings taken on the
schedule `watchdog.claims.finish` keeps (docs/watchdog.md "Scheduling and claims"), modelled
here in plain numbers — its SQL is tested in tests/watchdog/test_claims.py."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from watchdog import checks
from watchdog.metrics import Sample

CHECK_S = 1.0  # the longest a check takes here; a reading comes at most this long after its due


def first_hung_at(
    period: float, window: float, freeze: float, lags: list[tuple[float, float]]
) -> float | None:
    """When the incident opens: checks due one period after the last was due (never
    sooner than half a period from the end), or at the verdict's `recheck_at` when that is
    sooner; each reading `lag[0]` after its due, each check over `lag[1]` after it."""
    samples: list[Sample] = []
    due = 0.0
    for read_lag, rest in lags:
        at = due + read_lag * CHECK_S
        end = at + rest * (CHECK_S - read_lag * CHECK_S)
        generated = min(at, freeze) * 10  # ten tokens a second until the freeze
        samples.append(Sample(at, 2, 0, generated, None, None))
        verdict = checks.check_hung("vllm-a", samples, window_s=window)
        if verdict.findings:
            return end
        next_due = max(due + period, end + period / 2)
        if verdict.recheck_at is not None:
            next_due = min(next_due, max(end, verdict.recheck_at))
        due = next_due
    return None


@given(
    period=st.sampled_from([2.0, 5.0, 30.0]),
    windows=st.integers(min_value=1, max_value=4),
    freeze_at=st.floats(min_value=0.05, max_value=0.95),
    lags=st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=40, max_size=40),
)
def test_a_hung_engine_opens_within_the_window_and_one_period_whatever_the_checks_lag(
    period: float, windows: int, freeze_at: float, lags: list[tuple[float, float]]
) -> None:
    window = period * windows  # a multiple of the period: where the lags used to matter
    freeze = 3 * period + freeze_at * period
    opened = first_hung_at(period, window, freeze, lags)
    assert opened is not None
    assert opened - freeze <= window + period + 2 * CHECK_S


def test_a_window_shorter_than_the_period_still_opens_within_the_window_and_one_period() -> None:
    lags = [(0.5, 0.5)] * 40
    opened = first_hung_at(30.0, 10.0, 95.0, lags)
    assert opened is not None and opened - 95.0 <= 10.0 + 30.0 + 2 * CHECK_S
