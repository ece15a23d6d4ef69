"""A hypothesis state machine over a rollout's life: jobs that succeed, fail, regress or
lose their worker, pause, resume, abort (letting jobs finish or cancelling them), and
any number of coordinator runs in any order. After every step:

- no host's job is ever queued twice (never a host deployed twice);
- no host after the canary is queued before every canary host succeeded;
- nothing is queued once the rollout stopped (halted, aborted, interrupted, succeeded);
- a host not reached was never queued, and its request was closed unrun;
- a halt happens exactly when the canary failed or failures after it pass the budget.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from deploys.models import DeployRequest
from fleet import planning
from fleet.coordinator import allowed
from fleet.models import Rollout, RolloutHost
from fleet.services import (
    rollout_abort,
    rollout_approve,
    rollout_create,
    rollout_pause,
    rollout_resume,
)
from tests.fleet.conftest import make_hosts
from tests.fleet.helpers import advance, committed, end_job

_names = itertools.count()
STOPPED = ("halted", "aborted", "interrupted", "succeeded")


class RolloutMachine(RuleBasedStateMachine):
    people = None
    version = None
    queued = None

    @initialize(
        count=st.integers(2, 6),
        canary=st.integers(1, 2),
        batch=st.integers(1, 3),
        budget=st.integers(0, 2),
    )
    def start(self, count: int, canary: int, batch: int, budget: int) -> None:
        self.queued.deploys.clear()
        hosts = make_hosts(count, prefix=f"m{next(_names)}")
        rollout = rollout_create(
            profile_version=self.version,
            requested_by=self.people.olga,
            hosts=hosts,
            canary=min(canary, count),
            batch_size=batch,
            budget_value=budget,
            acknowledge_warnings=True,
        )
        self.rollout = committed(rollout_approve, rollout=rollout, approver=self.people.alice)
        self.queued_when_stopped: int | None = None

    # -- helpers --------------------------------------------------------------------------
    def _running_children(self) -> list[int]:
        return list(
            DeployRequest.objects.filter(
                pk__in=self.queued.deploys, status__in=("approved", "running")
            ).values_list("pk", flat=True)
        )

    def _refresh(self) -> None:
        self.rollout.refresh_from_db()
        if self.rollout.status in STOPPED and self.queued_when_stopped is None:
            self.queued_when_stopped = len(self.queued.deploys)

    # -- rules ----------------------------------------------------------------------------
    @rule()
    def coordinator_runs(self) -> None:
        before = self.rollout.status
        views = [
            planning.HostView(b, s) for b, s in self.rollout.hosts.values_list("batch", "state")
        ]
        advance(self.rollout)
        self._refresh()
        if before == "running" and self.rollout.status == "halted":
            after = [
                planning.HostView(b, s) for b, s in self.rollout.hosts.values_list("batch", "state")
            ]
            canary_failed = any(v.batch == 0 and v.state in planning.FAILURES for v in after)
            over = planning.failures_after_canary(after) > allowed(self.rollout)
            assert canary_failed or over, (views, after)

    @precondition(lambda self: bool(self._running_children()))
    @rule(
        data=st.data(),
        outcome=st.sampled_from(["succeeded", "failed", "rolled_back", "regressed", "lost"]),
    )
    def a_job_ends(self, data: st.DataObject, outcome: str) -> None:
        pk = data.draw(st.sampled_from(sorted(self._running_children())))
        if outcome == "regressed":
            end_job(pk, "rolled_back", regressed=True)
        elif outcome == "lost":
            end_job(pk, "interrupted")
        else:
            end_job(pk, outcome)

    @precondition(lambda self: self.rollout.status == "running")
    @rule()
    def pause(self) -> None:
        rollout_pause(rollout=self.rollout, user=self.people.bob)
        self._refresh()

    @precondition(lambda self: self.rollout.status == "paused")
    @rule()
    def resume(self) -> None:
        committed(rollout_resume, rollout=self.rollout, user=self.people.bob)
        self._refresh()

    @precondition(lambda self: self.rollout.status in ("running", "paused"))
    @rule(cancel=st.booleans())
    def abort(self, cancel: bool) -> None:
        committed(rollout_abort, rollout=self.rollout, user=self.people.bob, cancel_running=cancel)
        self._refresh()

    # -- invariants -----------------------------------------------------------------------
    @invariant()
    def no_host_is_queued_twice(self) -> None:
        assert len(self.queued.deploys) == len(set(self.queued.deploys))

    @invariant()
    def the_canary_goes_first(self) -> None:
        rows = {r.request_id: r for r in self.rollout.hosts.all()}
        canary = [r for r in rows.values() if r.batch == 0]
        for pk in self.queued.deploys:
            if rows[pk].batch > 0:
                assert all(r.state == RolloutHost.State.SUCCEEDED for r in canary)

    @invariant()
    def nothing_is_queued_after_the_rollout_stopped(self) -> None:
        if self.queued_when_stopped is not None:
            assert len(self.queued.deploys) == self.queued_when_stopped

    @invariant()
    def hosts_not_reached_are_untouched(self) -> None:
        for row in self.rollout.hosts.filter(state=RolloutHost.State.NOT_REACHED):
            assert row.request_id not in self.queued.deploys
            assert DeployRequest.objects.get(pk=row.request_id).status == "cancelled"

    @invariant()
    def a_succeeded_rollout_ended_every_host_within_the_budget(self) -> None:
        if self.rollout.status != Rollout.Status.SUCCEEDED:
            return
        views = [
            planning.HostView(b, s) for b, s in self.rollout.hosts.values_list("batch", "state")
        ]
        assert all(v.state in planning.ENDED for v in views)
        assert planning.failures_after_canary(views) <= allowed(self.rollout)


@pytest.mark.django_db
def test_a_rollout_never_queues_a_host_twice_and_stops_at_its_budget(
    people, version, on_host, queued
):
    RolloutMachine.people = people
    RolloutMachine.version = version
    RolloutMachine.queued = queued
    run_state_machine_as_test(
        RolloutMachine,
        settings=settings(
            max_examples=25,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        ),
    )
