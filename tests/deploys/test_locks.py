"""One job per host: the host lease on its own, and two deploy jobs contending for a host."""

from __future__ import annotations

import dataclasses
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.db import connections
from django.utils import timezone

from deploys.jobs import queue, runner
from deploys.jobs.context import JobContext
from deploys.jobs.flow import Step
from deploys.jobs.lease import HostBusy, HostLease
from deploys.jobs.recorder import Recorder
from deploys.jobs.steps import StepResult
from deploys.locks import HostLock
from deploys.models import Host, JobStep, PushedUnit
from tests.deploys.helpers import (
    approved_request,
    make_host,
    make_users,
    push_only,
    step_rows,
    unique,
    wait_for,
)
from tests.testhost.host import TestHost

STEPS = push_only()  # locking is about the host, not about what the steps do there

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _no_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    """Approving enqueues the job; these tests run it themselves."""
    monkeypatch.setattr(queue, "async_task", lambda *args, **kwargs: None)


@pytest.fixture
def host_row() -> Host:
    return Host.objects.create(name=unique("h"), address="192.0.2.1")


def in_thread(fn: Any, *args: Any) -> threading.Thread:
    def run() -> None:
        try:
            fn(*args)
        finally:
            connections.close_all()

    t = threading.Thread(target=run)
    t.start()
    return t


# --------------------------------------------------------------------------------------
# the lease


def test_a_held_host_cannot_be_taken_until_released(host_row: Host) -> None:
    first = HostLease.try_acquire(host_row.pk, purpose="deploy #1")
    assert first is not None and first.took_over_from == ""
    row = HostLock.objects.get(host=host_row)
    assert row.owner == first.owner and row.expires_at > timezone.now()

    assert HostLease.try_acquire(host_row.pk) is None

    assert first.release() is True
    assert HostLock.objects.get(host=host_row).owner == ""
    second = HostLease.try_acquire(host_row.pk)
    assert second is not None and second.owner != first.owner


def test_an_expired_lease_is_taken_over_and_its_owner_finds_out(host_row: Host) -> None:
    dead = HostLease.try_acquire(host_row.pk, duration=60)
    assert dead is not None
    HostLock.objects.filter(host=host_row).update(expires_at=timezone.now() - timedelta(seconds=1))

    taker = HostLease.try_acquire(host_row.pk)

    assert taker is not None and taker.took_over_from == dead.owner
    assert dead.renew() is False and dead.lost
    assert dead.release() is False, "a late release must not free the new holder's lock"
    assert HostLock.objects.get(host=host_row).owner == taker.owner


def test_waiting_gives_up_naming_the_holder(host_row: Host) -> None:
    holder = HostLease.try_acquire(host_row.pk, purpose="deploy #41")
    assert holder is not None
    tries: list[bool] = []
    with pytest.raises(HostBusy, match=r"held by .*\(deploy #41\) until .*waited 0.3s"):
        HostLease.acquire(
            host_row.pk, wait=0.3, poll=0.05, may_try=lambda: tries.append(True) or True
        )
    assert len(tries) >= 2, "it tried again until the wait ran out, not once"


def test_a_waiter_gets_the_host_when_it_is_released(host_row: Host) -> None:
    holder = HostLease.try_acquire(host_row.pk)
    assert holder is not None
    got: list[HostLease] = []
    waiter = in_thread(lambda: got.append(HostLease.acquire(host_row.pk, wait=30, poll=0.05)))
    time.sleep(0.3)
    assert got == []
    holder.release()
    waiter.join(10)
    assert len(got) == 1 and got[0].took_over_from == ""


def test_renewal_keeps_the_lease_alive(host_row: Host) -> None:
    lease = HostLease.try_acquire(host_row.pk, duration=1)
    assert lease is not None
    lease.start_renewing(every=0.1)
    try:
        time.sleep(1.5)  # longer than the lease itself
        assert HostLease.try_acquire(host_row.pk) is None
        assert not lease.lost
    finally:
        assert lease.release()


# --------------------------------------------------------------------------------------
# deploy jobs contending for one host (real SSH)


def held_until_the_others_wait(name: str, others: list[int]) -> tuple[Step, ...]:
    """The real steps, with `name` held until every other request's job has begun waiting
    for the host (its host_lock step is recorded): the overlap under test is then certain,
    however busy the machine (a fixed sleep in the step only made it likely)."""

    def wrap(step: Step) -> Step:
        def held(ctx: JobContext, rec: Recorder, *needs: Any) -> StepResult:
            waiting = [pk for pk in others if pk != ctx.request.pk]
            wait_for(  # the bound only guards against a hang; the assertions say what failed
                lambda: (
                    JobStep.objects.filter(request_id__in=waiting, name="host_lock").count()
                    == len(waiting)
                ),
                timeout=60,
            )
            return step.run(ctx, rec, *needs)

        return dataclasses.replace(step, run=held)

    return tuple(wrap(s) if s.name == name else s for s in STEPS)


@pytest.mark.testhost
def test_two_jobs_on_one_host_run_one_after_the_other(testhost: TestHost) -> None:
    people = make_users()
    host = make_host(testhost)
    requests = [approved_request(host, *people) for _ in range(2)]
    start = threading.Barrier(2)
    results: dict[int, str] = {}

    def deliver(pk: int) -> None:
        start.wait()
        held = held_until_the_others_wait("push", [r.pk for r in requests])
        results[pk] = runner.run_deploy(pk, steps=held)

    threads = [in_thread(deliver, r.pk) for r in requests]
    for t in threads:
        t.join(120)

    assert results == {r.pk: "succeeded" for r in requests}
    spans = []
    for r in requests:
        steps = {s.name: s for s in JobStep.objects.filter(request=r)}
        spans.append((steps["host_lock"].started_at, steps["host_lock"].finished_at, steps))
    spans.sort(key=lambda s: s[1])
    (_, _, first), (second_waiting, second_locked, _) = spans
    first_done = first["daemon_reload"].finished_at
    assert second_waiting < first_done, "both jobs were running at once"
    assert second_locked >= first_done, "the second job got the host only after the first"
    assert PushedUnit.objects.count() == 2


@pytest.mark.testhost
def test_job_takes_over_a_dead_workers_expired_lease(testhost: TestHost) -> None:
    people = make_users()
    host = make_host(testhost)
    request = approved_request(host, *people)
    HostLock.objects.create(
        host=host, owner="worker-that-died", expires_at=timezone.now() - timedelta(seconds=5)
    )

    assert runner.run_deploy(request.pk, steps=STEPS) == "succeeded"

    lock_step = JobStep.objects.get(request=request, name="host_lock")
    assert lock_step.result["took_over_from"] == "worker-that-died"
    assert "took over the expired lease of worker-that-died" in lock_step.log


@pytest.mark.testhost
def test_job_gives_up_on_a_host_held_too_long(testhost: TestHost) -> None:
    people = make_users()
    host = make_host(testhost)
    request = approved_request(host, *people)
    holder = HostLease.try_acquire(host.pk, purpose="deploy #999")
    assert holder is not None

    assert runner.run_deploy(request.pk, steps=STEPS, lock_wait=0.5) == "failed"

    request.refresh_from_db()
    assert request.status_reason.startswith(f"host_lock: {host.name} is busy: held by ")
    assert "(deploy #999)" in request.status_reason
    assert step_rows(request) == [
        ("host_lock", "failed"),
        ("preflight", "skipped"),
        ("push", "skipped"),
        ("daemon_reload", "skipped"),
    ]
    assert HostLock.objects.get(host=host).owner == holder.owner


@pytest.mark.testhost
def test_job_that_lost_its_lease_stops_before_the_next_step(testhost: TestHost) -> None:
    people = make_users()
    host = make_host(testhost)
    request = approved_request(host, *people)

    def preflight_then_lose_the_lock(ctx: JobContext, rec: Recorder) -> StepResult:
        result = STEPS[0].run(ctx, rec)
        HostLock.objects.filter(host=host).update(owner="another-worker")
        assert ctx.lease is not None and ctx.lease.renew() is False
        return result

    steps = (dataclasses.replace(STEPS[0], run=preflight_then_lose_the_lock), *STEPS[1:])
    assert runner.run_deploy(request.pk, steps=steps) == "failed"

    request.refresh_from_db()
    assert "lost the lock" in request.status_reason
    assert not PushedUnit.objects.exists()
    assert HostLock.objects.get(host=host).owner == "another-worker", "not ours to release"
