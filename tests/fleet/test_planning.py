"""The rollout's plan and next move, pure (fleet.planning): batches, budget, decisions."""

from __future__ import annotations

import pytest

from fleet.planning import (
    FAILED,
    INTERRUPTED,
    REGRESSED,
    STARTED,
    SUCCEEDED,
    WAITING,
    HostView,
    PlanError,
    allowed_failures,
    next_move,
    plan_batches,
)


def hosts(*pairs: tuple[int, str]) -> list[HostView]:
    return [HostView(batch=b, state=s) for b, s in pairs]


def test_the_canary_comes_first_then_batches_of_the_batch_size():
    assert plan_batches(8, canary=1, batch_size=3) == [0, 1, 1, 1, 2, 2, 2, 3]
    assert plan_batches(3, canary=1, batch_size=2) == [0, 1, 1]
    assert plan_batches(5, canary=2, batch_size=1) == [0, 0, 1, 2, 3]


def test_a_rollout_to_one_host_is_its_canary_alone():
    assert plan_batches(1, canary=1, batch_size=5) == [0]


@pytest.mark.parametrize(
    ("count", "canary", "size", "words"),
    [
        (0, 1, 1, "at least one host"),
        (3, 0, 1, "canary is at least one"),
        (3, 4, 1, "larger than the rollout"),
        (3, 1, 0, "batch is at least one"),
    ],
)
def test_an_impossible_plan_says_which_setting_is_wrong(count, canary, size, words):
    with pytest.raises(PlanError, match=words):
        plan_batches(count, canary=canary, batch_size=size)


def test_a_budget_in_percent_counts_the_hosts_after_the_canary_rounded_down():
    assert allowed_failures("percent", 25, after_canary=7) == 1
    assert allowed_failures("percent", 10, after_canary=5) == 0
    assert allowed_failures("percent", 100, after_canary=5) == 5
    assert allowed_failures("count", 2, after_canary=5) == 2


@pytest.mark.parametrize(("kind", "value"), [("percent", 101), ("count", -1), ("share", 1)])
def test_a_budget_out_of_range_is_refused(kind, value):
    with pytest.raises(PlanError):
        allowed_failures(kind, value, after_canary=4)


def test_the_first_move_starts_the_canary():
    assert next_move(hosts((0, WAITING), (1, WAITING)), allowed=0).action == "start"
    assert next_move(hosts((0, WAITING), (1, WAITING)), allowed=0).batch == 0


def test_while_a_batch_runs_the_coordinator_waits():
    move = next_move(hosts((0, SUCCEEDED), (1, STARTED), (1, SUCCEEDED), (2, WAITING)), allowed=0)
    assert move.action == "wait"


def test_a_regression_of_the_canary_halts_whatever_the_budget():
    move = next_move(hosts((0, REGRESSED), (1, WAITING), (1, WAITING)), allowed=5)
    assert (move.action, move.reason) == ("halt", "the canary failed on 1 host(s)")


def test_a_failure_within_the_budget_goes_on_with_the_next_batch():
    move = next_move(hosts((0, SUCCEEDED), (1, FAILED), (1, SUCCEEDED), (2, WAITING)), allowed=1)
    assert (move.action, move.batch) == ("start", 2)


def test_failures_beyond_the_budget_halt_without_waiting_for_the_rest_of_the_batch():
    move = next_move(hosts((0, SUCCEEDED), (1, FAILED), (1, REGRESSED), (1, STARTED)), allowed=1)
    assert move.action == "halt"
    assert "2 host(s) failed after the canary; the budget is 1" in move.reason


def test_a_lost_worker_interrupts_the_rollout():
    assert next_move(hosts((0, SUCCEEDED), (1, INTERRUPTED)), allowed=9).action == "interrupt"


def test_when_every_host_ended_within_the_budget_the_rollout_succeeds():
    move = next_move(hosts((0, SUCCEEDED), (1, FAILED), (1, SUCCEEDED)), allowed=1)
    assert move.action == "succeed"
