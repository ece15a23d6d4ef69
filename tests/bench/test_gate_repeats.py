"""The gate on a noisy machine: the exact Mann-Whitney test behind "regressed" once more
repeats are measured, how sure each verdict is in words, how many more repeats a time
budget allows, a reference's drift, and results that come back from a host checked."""

from __future__ import annotations

import math

import pytest

from servebench.gate import (
    NOISY,
    PASS,
    REGRESSED,
    compare_metric,
    drift,
    gate,
    how_sure,
    mann_whitney_p,
    more_repeats,
    verdict_certainty,
)
from servebench.schema import validate_result
from tests.bench.test_results import _run


def test_no_overlap_in_three_against_three_is_a_one_in_twenty_chance() -> None:
    assert mann_whitney_p([5, 6, 7], [1, 2, 3]) == pytest.approx(1 / 20)
    assert mann_whitney_p([5, 6], [1, 2]) == pytest.approx(1 / 6)
    # five against five with one pair the other way round: 2 orderings of 252 as extreme
    assert mann_whitney_p([4.5, 6, 7, 8, 9], [1, 2, 3, 4, 5]) == pytest.approx(2 / 252)
    assert mann_whitney_p([2.5, 6, 7, 8, 9], [1, 2, 3, 4, 5]) == pytest.approx(7 / 252)
    assert mann_whitney_p([1, 2, 3], [5, 6, 7]) == pytest.approx(1.0)


def test_small_runs_are_judged_as_before_the_test() -> None:
    # 2 + 2 apart: regressed (no overlap), as the gate always said
    assert compare_metric("output_throughput", 1, [74, 74.2], [62.9, 63]).verdict == REGRESSED
    # 3 + 3 overlapping: noisy
    c = compare_metric("ttft_p50_ms", 8, [100.0, 130.0, 101.0], [112.0, 99.0, 115.0])
    assert c.verdict == NOISY


def test_more_repeats_turn_a_noisy_slowdown_into_a_regression() -> None:
    # the H200 run: the baseline spread 91.6 / 89.3 and one lucky candidate repeat
    base = [91.6, 89.3, 90.5]
    noisy = compare_metric("output_throughput", 1, base, [61.0, 96.3])
    assert noisy.verdict == NOISY
    more = compare_metric(
        "output_throughput", 1, base, [61.0, 96.3, 62.5, 63.0, 60.8, 64.1, 62.2, 61.7]
    )
    assert more.overlap and more.p_worse <= 0.05
    assert more.verdict == REGRESSED
    assert "sure it is slower" in how_sure(more)
    assert "8 repeats against 3" in how_sure(more)
    assert "large effect" in how_sure(more)
    assert "not sure, the repeats overlap" in how_sure(noisy)


def test_how_sure_says_when_one_repeat_leaves_only_the_threshold() -> None:
    c = compare_metric("output_throughput", 1, [74.0], [60.0])
    assert "the threshold alone decides" in how_sure(c)


def test_the_run_verdict_is_said_with_the_metric_that_decides_it() -> None:
    result = gate(_run([74.0, 74.2, 73.9]), _run([62.9, 63.0, 62.7]))
    words = verdict_certainty(result)
    assert words.startswith("regressed: Output tokens/s at 1 stream down 14.5%")
    assert "tok/s" in words and "sure it is slower" in words


def test_more_repeats_fit_the_budget_and_stop_once_decided() -> None:
    noisy = gate(_run([74.0, 72.0]), _run([60.0, 73.0]))
    assert noisy.verdict == NOISY
    ask = {"repeats_so_far": 2, "seconds_per_repeat": 30.0, "spent_s": 0.0}
    assert more_repeats(noisy, budget_s=300, **ask) == 2
    assert more_repeats(noisy, budget_s=45, **ask) == 1  # one more fits
    assert more_repeats(noisy, budget_s=20, **ask) == 0  # none fits
    assert more_repeats(noisy, budget_s=300, max_repeats=2, **ask) == 0
    decided = gate(_run([74.0, 74.2, 73.9]), _run([62.9, 63.0, 62.7]))
    assert decided.sure
    assert more_repeats(decided, budget_s=300, **ask) == 0


def test_a_regression_that_few_repeats_could_show_by_chance_is_measured_again() -> None:
    # 2 + 2 repeats apart: regressed (as the gate always said), but a 1-in-6 chance
    unsure = gate(_run([74.0, 74.2]), _run([62.9, 63.0]))
    assert unsure.verdict == REGRESSED and not unsure.sure
    ask = {"repeats_so_far": 2, "seconds_per_repeat": 30.0, "spent_s": 0.0}
    assert more_repeats(unsure, budget_s=300, **ask) == 2
    assert unsure.to_dict()["sure"] is False


def test_a_reference_that_moved_beyond_the_threshold_marks_the_verdicts_unreliable() -> None:
    same = drift(_run([74.0, 74.3]), _run([73.6, 74.1]), 5.0)
    assert not same.drifted
    assert "the verdicts stand" in same.sentence()
    faster = drift(_run([74.0, 74.3]), _run([80.0, 80.5]), 5.0)  # drift either way counts
    assert faster.drifted
    assert "unreliable" in faster.sentence() and "Output tokens/s at 1 stream" in faster.sentence()
    assert faster.to_dict()["sentence"] == faster.sentence()


def test_further_repeats_join_a_run_numbered_after_its_own() -> None:
    joined = _run([74.0, 74.2]).with_more_repeats(_run([60.0, 61.0, 62.0]))
    assert [lv.repeat for lv in joined.levels] == [0, 1, 2, 3, 4]
    assert joined.settings["repeats"] == 5
    assert len(gate(_run([74.0]), joined).comparisons[0].candidate) == 5


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda d: d["levels"][0]["ttft_ms"].__setitem__("median", math.nan), "levels[0].ttft_ms"),
        (lambda d: d["levels"][0].__setitem__("output_throughput", "fast"), "output_throughput"),
        (lambda d: d["levels"][0].__setitem__("completed", -1), "levels[0].completed"),
        (lambda d: d.__setitem__("levels", {"a": 1}), "result.levels"),
        (lambda d: d["levels"][0]["requests"][0].__setitem__("itl_s", "x"), "requests[0].itl_s"),
        (lambda d: d["levels"][0].__setitem__("errors", {"boom": "many"}), "errors"),
    ],
)
def test_a_result_from_a_host_is_checked_and_the_fault_named(change: object, where: str) -> None:
    data = _run([74.0]).to_dict()
    assert validate_result(data).levels[0].output_throughput == pytest.approx(72.07, rel=0.01)
    change(data)  # type: ignore[operator]
    with pytest.raises(ValueError, match=where.replace("[", r"\[").replace("]", r"\]")):
        validate_result(data)


def test_a_faster_candidate_passes_and_says_how_sure() -> None:
    c = compare_metric("output_throughput", 1, [60.0, 60.5, 60.2], [80.0, 80.2, 79.9])
    assert c.verdict == PASS
    assert "sure it is faster" in how_sure(c)
