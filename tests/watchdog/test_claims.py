"""Exactly one worker checks a due host, never one a job holds (watchdog.claims,
watchdog.runner, watchdog.dispatch)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connections
from django.utils import timezone

from deploys.jobs.lease import HostLease
from deploys.models import DeployRequest, Host
from deploys.signals import job_finished
from tests.deploys.helpers import wait_for
from tests.doubles.watch_host import FakeHost, FakeHostTransport
from tests.watchdog.helpers import PORT, UNIT, healthy_fake, make_host
from watchdog import claims, dispatch, queue, runner
from watchdog.models import HostWatch, Incident

pytestmark = pytest.mark.django_db(transaction=True)


def due_watch(name: str = "gpu1") -> HostWatch:
    host = make_host(name)
    claims.ensure_watches()
    HostWatch.objects.filter(host=host).update(next_due=timezone.now())
    return HostWatch.objects.get(host=host)


def test_every_reachable_host_gets_one_watch_first_due_within_a_period() -> None:
    for i in range(20):
        make_host(f"gpu{i}")
    Host.objects.filter(name="gpu19").update(archived=True)
    Host.objects.filter(name="gpu18").update(transport=Host.Transport.SSH)  # no pinned key
    before = timezone.now()
    assert claims.ensure_watches() == 18
    assert claims.ensure_watches() == 0
    dues = list(HostWatch.objects.values_list("next_due", flat=True))
    assert all(before <= due <= before + timedelta(seconds=31) for due in dues)
    assert len({round(d.timestamp()) for d in dues}) > 3, "spread over the period, not all at once"


def test_two_claimers_at_once_one_wins_each_host() -> None:
    # The race is won by chance: run it many times. On PostgreSQL an UPDATE whose
    # conditions sat in a subquery let both claimers win every host in about one race of
    # fifteen (watchdog.claims._take).
    for i in range(20):
        make_host(f"gpu{i}")
    claims.ensure_watches()
    every = sorted(HostWatch.objects.values_list("pk", flat=True))
    for _ in range(25):
        HostWatch.objects.update(next_due=timezone.now(), claimed_by="", claimed_until=None)
        won: list[list[int]] = [[], []]
        start = threading.Barrier(2)

        def claimer(slot: int, won: list[list[int]] = won, start: Any = start) -> None:
            try:
                start.wait()
                won[slot] = claims.claim_due()[1]
            finally:
                connections.close_all()

        threads = [threading.Thread(target=claimer, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not set(won[0]) & set(won[1]), "a host was claimed twice"
        assert sorted(won[0] + won[1]) == every
    assert claims.claim_due()[1] == [], "claimed hosts are not claimed again"


def test_a_host_whose_job_lease_is_held_is_not_claimed() -> None:
    watch = due_watch()
    lease = HostLease.try_acquire(watch.host_id, purpose="deploy")
    assert lease is not None
    assert claims.claim_due()[1] == []
    lease.release()
    assert claims.claim_due()[1] == [watch.pk]


def test_an_expired_claim_is_taken_over_and_the_late_check_writes_nothing() -> None:
    watch = due_watch()
    token, [pk] = claims.claim_due()
    HostWatch.objects.filter(pk=pk).update(claimed_until=timezone.now() - timedelta(seconds=1))
    second, [again] = claims.claim_due()
    assert again == pk and second != token
    assert runner.run_check(pk, token).startswith("not ours")
    fake = healthy_fake()
    assert runner.run_check(pk, second, connect=lambda h: FakeHostTransport(fake)).startswith(
        "checked"
    )
    watch.refresh_from_db()
    assert watch.claimed_by == "" and watch.last_check_at is not None
    assert watch.next_due > timezone.now() + timedelta(seconds=25), "due one period later"
    assert watch.readings["now"]["units"][0]["unit"] == "vllm-a"


def test_a_job_that_takes_the_host_after_the_claim_skips_the_check() -> None:
    watch = due_watch()
    token, [pk] = claims.claim_due()
    lease = HostLease.try_acquire(watch.host_id, purpose="deploy")
    assert lease is not None
    assert runner.run_check(pk, token) == "skipped: a job holds the host"
    lease.release()
    watch.refresh_from_db()
    assert watch.claimed_by == "" and watch.last_check_at is None


class JobMidway(FakeHostTransport):
    """A deploy takes the host while the check reads it: the unit stops, and (with
    `release`) the short job is done before the check ends."""

    def __init__(self, host: FakeHost, host_id: int, *, release: bool) -> None:
        super().__init__(host)
        self.host_id, self.release = host_id, release

    def unit_properties(self, unit: str, names: Iterable[str]) -> dict[str, str]:
        lease = HostLease.try_acquire(self.host_id, purpose="deploy")
        assert lease is not None
        self.host.units[unit].active = "inactive"
        if self.release:
            lease.release()
        return super().unit_properties(unit, names)


@pytest.mark.parametrize("release", [False, True], ids=["still held", "already released"])
def test_a_job_that_takes_the_host_during_the_check_leaves_no_incident(release: bool) -> None:
    watch = due_watch()
    fake = healthy_fake()
    token, [pk] = claims.claim_due()
    said = runner.run_check(pk, token, connect=lambda h: JobMidway(fake, h.pk, release=release))
    assert said == "skipped: a job took the host during the check"
    assert not Incident.objects.filter(host_id=watch.host_id).exists(), "a deploy half done"
    watch.refresh_from_db()
    assert watch.claimed_by == "" and watch.last_check_at is None and watch.readings == {}


def test_a_slow_hosts_check_goes_on_in_a_thread_and_frees_the_worker(settings: Any) -> None:
    watch = due_watch()
    slow = healthy_fake()
    slow.latency_s = 0.2  # a host command: a check makes several
    token, [pk] = claims.claim_due()
    started = time.monotonic()
    said = runner.run_check_soon(pk, token, wait_s=0.1, connect=lambda h: FakeHostTransport(slow))
    assert said.startswith("still checking after 0.1 s") and time.monotonic() - started < 0.5
    assert wait_for(lambda: HostWatch.objects.get(pk=pk).last_check_at is not None, timeout=10)
    watch.refresh_from_db()
    assert watch.claimed_by == "" and watch.readings["now"]["units"][0]["unit"] == UNIT
    assert runner.BACKGROUND.running == 0

    # A quick one is answered by the task itself; with no threads left, so is a slow one.
    HostWatch.objects.filter(pk=pk).update(next_due=timezone.now())
    token, [pk] = claims.claim_due()
    quick = runner.run_check_soon(
        pk, token, wait_s=30, connect=lambda h: FakeHostTransport(healthy_fake())
    )
    assert quick.startswith("checked in")
    settings.WATCHDOG_BACKGROUND_CHECKS = 0
    HostWatch.objects.filter(pk=pk).update(next_due=timezone.now())
    token, [pk] = claims.claim_due()
    said = runner.run_check_soon(pk, token, wait_s=0.1, connect=lambda h: FakeHostTransport(slow))
    assert said.startswith("checked in")


def test_the_dispatcher_enqueues_one_check_per_due_host_and_a_job_end_asks_for_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, second = due_watch("gpu1"), due_watch("gpu2")
    queued: list[tuple[Any, ...]] = []
    monkeypatch.setattr(queue, "async_task", lambda *a, **k: queued.append(a))
    assert dispatch.run_dispatcher(seconds=0) == 2
    assert sorted(a[1] for a in queued) == [first.pk, second.pk]
    assert {a[0] for a in queued} == {queue.CHECK_TASK}
    HostWatch.objects.update(
        claimed_by="", claimed_until=None, next_due=timezone.now() + timedelta(hours=1)
    )
    queued.clear()
    request = DeployRequest(host_id=first.host_id)
    job_finished.send(sender=DeployRequest, request=request, status="succeeded")
    assert [a[1] for a in queued] == [first.pk], "the job's host is checked again at once"


@pytest.mark.parametrize(("late_s", "due_in_s"), [(5, 25), (40, 15)])
def test_the_next_check_is_one_period_after_the_last_was_due_but_never_at_once(
    late_s: int, due_in_s: int
) -> None:
    watch = due_watch()
    HostWatch.objects.filter(pk=watch.pk).update(
        next_due=timezone.now() - timedelta(seconds=late_s)
    )
    token, [pk] = claims.claim_due()
    assert claims.finish(pk, token, period_s=30, readings=None, seconds=None)
    watch.refresh_from_db()
    due_in = (watch.next_due - timezone.now()).total_seconds()
    assert due_in_s - 2 < due_in <= due_in_s


def test_a_stall_the_window_will_decide_before_the_period_ends_is_checked_again_then() -> None:
    # A busy host whose hung window (10 s) ends before its period (600 s): the check asks
    # to be checked again when the window ends, so a hung engine is still found within
    # the window and one period. An idle host waits its period.
    busy, idle = due_watch("gpu1"), due_watch("gpu2")
    HostWatch.objects.update(period_s=600, hung_window_s=10)
    fake, quiet = healthy_fake(), healthy_fake()
    fake.servers[PORT].running = 2
    quiet.servers[PORT].running = 0
    fakes = {busy.host_id: fake, idle.host_id: quiet}
    token, due = claims.claim_due()
    assert sorted(due) == sorted([busy.pk, idle.pk])
    for pk in due:
        runner.run_check(pk, token, connect=lambda h: FakeHostTransport(fakes[h.pk]))
    busy.refresh_from_db()
    idle.refresh_from_db()
    assert 8 < (busy.next_due - timezone.now()).total_seconds() <= 10
    assert 590 < (idle.next_due - timezone.now()).total_seconds() <= 600


def test_a_host_that_cannot_be_connected_is_unreachable_and_its_incidents_stay_open() -> None:
    watch = due_watch()
    fake = healthy_fake()
    fake.units["vllm-a"].active = "failed"
    token, [pk] = claims.claim_due()
    runner.run_check(pk, token, connect=lambda h: FakeHostTransport(fake))

    def refuse(host: Any) -> Any:
        raise OSError("no route to host")

    HostWatch.objects.filter(pk=pk).update(next_due=timezone.now())
    token, [pk] = claims.claim_due()
    assert "OSError: no route to host" in runner.run_check(pk, token, connect=refuse)
    open_keys = set(
        Incident.objects.filter(host_id=watch.host_id, closed_at__isnull=True).values_list(
            "key", flat=True
        )
    )
    assert open_keys == {"unit_failed:vllm-a", "unreachable:ssh"}


def test_with_the_watchdog_off_nothing_is_dispatched(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    due_watch()
    settings.WATCHDOG_ENABLED = False
    queued: list[tuple[Any, ...]] = []
    monkeypatch.setattr(queue, "async_task", lambda *a, **k: queued.append(a))
    assert dispatch.run_dispatcher(seconds=0) == 0
    assert queued == []
