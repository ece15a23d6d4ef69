"""Rollouts through their services and the coordinator, without real hosts (the unit
reads are the deploy tests' fakes, the jobs' ends written as the runner writes them)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from audit.models import AuditEvent
from deploys.models import DeployRequest
from fleet import coordinator
from fleet.models import Rollout, RolloutHost
from fleet.selectors import text_groups, verdict
from fleet.services import (
    host_group_save,
    rollout_abort,
    rollout_approve,
    rollout_create,
    rollout_pause,
    rollout_resume,
)
from tests.fleet.conftest import make_hosts
from tests.fleet.helpers import advance, committed, end_job

pytestmark = pytest.mark.django_db


def request_rollout(people, version, hosts, **kwargs):
    kwargs.setdefault("canary", 1)
    kwargs.setdefault("batch_size", 2)
    return rollout_create(
        profile_version=version,
        requested_by=people.olga,
        hosts=hosts,
        acknowledge_warnings=True,
        **kwargs,
    )


def states(rollout):
    return [r.state for r in rollout.hosts.order_by("position")]


def test_a_rollout_groups_its_hosts_texts_and_says_which_versions_were_linted(
    people, version, on_host, queued
):
    fleet = make_hosts(3) + make_hosts(1, prefix="old", vllm="0.13.0")
    rollout = request_rollout(people, version, fleet)
    [group] = text_groups(rollout)
    assert group.label == "A" and len(group.hosts) == 4
    by_version = {lint.vllm_version: lint.hosts for lint in group.lints}
    assert by_version["0.13.0"] == ["old-1"]
    assert sorted(by_version["0.16.0"]) == ["gpu-1", "gpu-2", "gpu-3"]
    assert [r.batch for r in rollout.hosts.order_by("position")] == [0, 1, 1, 2]
    assert AuditEvent.objects.filter(kind="rollout.requested").count() == 1
    # no deploy request yet: nothing anyone could approve alone
    assert DeployRequest.objects.count() == 0


def test_a_group_is_a_label_a_host_may_carry_with_others(people, hosts):
    web = host_group_save(actor=people.ada, name="serving", hosts=hosts[:3])
    host_group_save(actor=people.ada, name="canaries", hosts=hosts[:1])
    assert sorted(g.name for g in hosts[0].host_groups.all()) == ["canaries", "serving"]
    assert web.hosts.count() == 3
    with pytest.raises(PermissionDenied):
        host_group_save(actor=people.olga, name="mine", hosts=hosts)


def test_a_host_that_cannot_be_requested_blocks_the_rollout_named(people, version, hosts, on_host):
    hosts[2].archived = True
    hosts[2].save()
    with pytest.raises(ValidationError, match="gpu-3: host: gpu-3 is archived"):
        request_rollout(people, version, hosts)


def test_the_requester_never_approves_and_the_approval_pins_the_texts(
    people, version, hosts, on_host, queued
):
    rollout = request_rollout(people, version, hosts)
    with pytest.raises(PermissionDenied):
        rollout_approve(rollout=rollout, approver=people.olga)
    with pytest.raises(ValidationError, match="changed since your page"):
        rollout_approve(rollout=rollout, approver=people.alice, expected_texts_sha256="0" * 64)
    rollout = committed(
        rollout_approve,
        rollout=rollout,
        approver=people.alice,
        expected_texts_sha256=rollout.texts_sha256,
    )
    assert rollout.status == "running"
    children = DeployRequest.objects.order_by("pk")
    assert [c.status for c in children] == ["approved"] * 5
    assert {c.decided_by_id for c in children} == {people.alice.pk}
    assert queued.deploys == [] and queued.advances == [rollout.pk]


def test_the_canary_runs_alone_then_batches_in_parallel_to_success(
    people, version, hosts, on_host, queued
):
    rollout = rollout_approve(
        rollout=request_rollout(people, version, hosts), approver=people.alice
    )
    rows = list(rollout.hosts.order_by("position"))
    rollout = advance(rollout)
    assert queued.deploys == [rows[0].request_id]
    advance(rollout)  # a second look starts nothing again
    assert queued.deploys == [rows[0].request_id]
    end_job(rows[0].request_id, "succeeded")
    advance(rollout)
    assert queued.deploys[1:] == [rows[1].request_id, rows[2].request_id]
    for row in rows[1:3]:
        end_job(row.request_id, "succeeded")
    advance(rollout)
    for row in rows[3:]:
        end_job(row.request_id, "succeeded")
    rollout = advance(rollout)
    assert rollout.status == "succeeded"
    assert sorted(queued.deploys) == sorted(r.request_id for r in rows)
    assert verdict(rollout).succeeded == 5


def test_a_canary_regression_halts_before_any_other_host_which_keeps_what_it_ran(
    people, version, hosts, on_host, queued
):
    rollout = rollout_approve(
        rollout=request_rollout(people, version, hosts, budget_value=4), approver=people.alice
    )
    canary = rollout.hosts.get(position=0)
    advance(rollout)
    end_job(canary.request_id, "rolled_back", regressed=True)
    rollout = advance(rollout)
    assert rollout.status == "halted"
    assert rollout.status_reason == "the canary failed on 1 host(s)"
    assert states(rollout) == ["regressed"] + ["not_reached"] * 4
    assert queued.deploys == [canary.request_id]
    others = DeployRequest.objects.exclude(pk=canary.request_id)
    assert {o.status for o in others} == {"cancelled"}
    assert {o.host_state for o in others} == {"unchanged: the job never ran"}
    assert AuditEvent.objects.filter(kind="rollout.halted").count() == 1


def test_a_failure_within_the_budget_goes_on_and_one_beyond_it_halts(
    people, version, hosts, on_host, queued
):
    rollout = rollout_approve(
        rollout=request_rollout(people, version, hosts, budget_value=1), approver=people.alice
    )
    rows = list(rollout.hosts.order_by("position"))
    advance(rollout)
    end_job(rows[0].request_id, "succeeded")
    advance(rollout)
    end_job(rows[1].request_id, "rolled_back")
    end_job(rows[2].request_id, "succeeded")
    rollout = advance(rollout)
    assert rollout.status == "running" and states(rollout)[3:] == ["started"] * 2
    end_job(rows[3].request_id, "failed")
    rollout = advance(rollout)
    assert rollout.status == "halted"
    assert "2 host(s) failed after the canary; the budget is 1" in rollout.status_reason
    # the batch's other job still runs and is recorded when it ends
    assert states(rollout) == ["succeeded", "failed", "succeeded", "failed", "started"]
    end_job(rows[4].request_id, "succeeded")
    rollout = advance(rollout)
    assert states(rollout)[4] == "succeeded" and rollout.status == "halted"


def test_pause_holds_the_next_batch_and_resume_starts_it(people, version, hosts, on_host, queued):
    rollout = rollout_approve(
        rollout=request_rollout(people, version, hosts), approver=people.alice
    )
    canary = rollout.hosts.get(position=0)
    advance(rollout)
    rollout_pause(rollout=rollout, user=people.alice)
    end_job(canary.request_id, "succeeded")
    rollout = advance(rollout)
    assert rollout.status == "paused" and queued.deploys == [canary.request_id]
    committed(rollout_resume, rollout=rollout, user=people.alice)
    advance(rollout)
    assert len(queued.deploys) == 3


def test_abort_cancels_the_running_jobs_and_leaves_the_rest_untouched(
    people, version, hosts, on_host, queued
):
    rollout = rollout_approve(
        rollout=request_rollout(people, version, hosts), approver=people.alice
    )
    canary = rollout.hosts.get(position=0)
    advance(rollout)
    DeployRequest.objects.filter(pk=canary.request_id).update(status="running")
    with pytest.raises(PermissionDenied):
        rollout_abort(rollout=rollout, user=people.vic)
    rollout = rollout_abort(rollout=rollout, user=people.bob, cancel_running=True)
    assert rollout.status == "aborted"
    child = DeployRequest.objects.get(pk=canary.request_id)
    assert child.status == "running" and child.cancel_requested_by == people.bob
    assert states(rollout) == ["started"] + ["not_reached"] * 4
    end_job(canary.request_id, "cancelled")
    rollout = advance(rollout)
    assert states(rollout)[0] == "cancelled" and not rollout.live


def test_a_lost_worker_interrupts_the_rollout_with_every_hosts_state_known(
    people, version, hosts, on_host, queued
):
    rollout = rollout_approve(
        rollout=request_rollout(people, version, hosts), approver=people.alice
    )
    rows = list(rollout.hosts.order_by("position"))
    advance(rollout)
    end_job(rows[0].request_id, "succeeded")
    advance(rollout)
    end_job(rows[1].request_id, "interrupted")
    rollout = advance(rollout)
    assert rollout.status == "interrupted"
    assert states(rollout) == ["succeeded", "interrupted", "started", "not_reached", "not_reached"]


def test_a_job_end_queues_its_rollouts_coordinator(people, version, hosts, on_host, queued):
    rollout = rollout_approve(
        rollout=request_rollout(people, version, hosts), approver=people.alice
    )
    queued.advances.clear()
    committed(coordinator.child_ended, rollout.hosts.get(position=0).request_id)
    assert queued.advances == [rollout.pk]
    coordinator.child_ended(10**9)  # not a rollout's
    assert queued.advances == [rollout.pk]
    assert Rollout.objects.count() == 1 and RolloutHost.objects.count() == 5


def test_the_next_batch_waits_out_the_pause_after_the_previous_one(
    people, version, hosts, on_host, queued
):
    rollout = rollout_approve(
        rollout=request_rollout(people, version, hosts, pause_s=60), approver=people.alice
    )
    canary = rollout.hosts.get(position=0)
    advance(rollout)
    end_job(canary.request_id, "succeeded")
    rollout = advance(rollout)
    assert len(queued.deploys) == 1 and rollout.next_batch_at is not None
    RolloutHost.objects.filter(pk=canary.pk).update(
        finished_at=timezone.now() - timedelta(seconds=61)
    )
    rollout = advance(rollout)
    assert len(queued.deploys) == 3 and rollout.next_batch_at is None


def test_a_host_whose_text_changed_since_the_request_voids_the_approval(
    people, version, hosts, on_host, queued
):
    rollout = request_rollout(people, version, hosts)
    RolloutHost.objects.filter(rollout=rollout, position=3).update(unit_sha256="f" * 64)
    with pytest.raises(ValidationError, match="gpu-4 now gets another text"):
        rollout_approve(rollout=rollout, approver=people.alice)
    rollout.refresh_from_db()
    assert rollout.status == "void" and DeployRequest.objects.count() == 0
    assert AuditEvent.objects.filter(kind="rollout.voided").count() == 1
