"""What one check costs the database (watchdog.runner, watchdog.services): a quiet,
healthy host is read with a handful of queries and written once, so one worker keeps
hundreds of hosts on a 30 s period (docs/watchdog.md "Scale")."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from deploys.jobs.lease import HostLease
from tests.doubles.watch_host import FakeHostTransport
from tests.watchdog.helpers import healthy_fake, make_host
from watchdog import claims, queue, runner
from watchdog.models import HostWatch, Incident

pytestmark = pytest.mark.django_db(transaction=True)

# The watch with its host and whether a job holds the lease, the pushed units, the open
# incidents, the end of the claim.
QUIET_CHECK_QUERIES = 4


def claimed(name: str = "gpu1") -> tuple[str, int]:
    make_host(name)
    claims.ensure_watches()
    HostWatch.objects.update(next_due=timezone.now())
    token, [pk] = claims.claim_due()
    return token, pk


def test_a_quiet_healthy_check_takes_four_queries_and_no_transaction() -> None:
    token, pk = claimed()
    fake = healthy_fake()
    with CaptureQueriesContext(connection) as queries:
        result = runner.run_check(pk, token, connect=lambda h: FakeHostTransport(fake))
    assert result.startswith("checked"), result
    sql = [q["sql"] for q in queries.captured_queries]
    assert len(sql) <= QUIET_CHECK_QUERIES, "\n".join(sql)
    assert not [s for s in sql if s.upper().startswith(("BEGIN", "SAVEPOINT"))], sql
    watch = HostWatch.objects.get(pk=pk)
    assert watch.claimed_by == "" and watch.last_check_at is not None
    assert watch.readings["now"]["units"][0]["state"]["active"] == "active"


def test_a_check_whose_host_a_job_holds_is_skipped_in_two_queries() -> None:
    token, pk = claimed()
    lease = HostLease.try_acquire(HostWatch.objects.get(pk=pk).host_id, purpose="deploy")
    assert lease is not None
    with CaptureQueriesContext(connection) as queries:
        assert runner.run_check(pk, token) == "skipped: a job holds the host"
    lease.release()
    assert len(queries.captured_queries) <= 2, [q["sql"] for q in queries.captured_queries]


def test_an_incident_still_found_is_refreshed_without_a_new_one_and_writes_once() -> None:
    token, pk = claimed()
    fake = healthy_fake()
    fake.units["vllm-a"].active = "failed"
    runner.run_check(pk, token, connect=lambda h: FakeHostTransport(fake))
    [incident] = Incident.objects.filter(closed_at__isnull=True)
    HostWatch.objects.filter(pk=pk).update(next_due=timezone.now())
    token, [pk] = claims.claim_due()
    with CaptureQueriesContext(connection) as queries:
        runner.run_check(pk, token, connect=lambda h: FakeHostTransport(fake))
    writes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
    assert len(writes) == 2, writes  # the incident's last sight, the end of the claim
    again = Incident.objects.get(closed_at__isnull=True)
    assert again.pk == incident.pk and again.last_seen_at > incident.last_seen_at


def test_a_successful_check_task_is_not_kept_in_the_task_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queued: list[dict[str, Any]] = []
    monkeypatch.setattr(queue, "async_task", lambda *a, **k: queued.append(k))
    queue.enqueue_check(1, "token")
    assert queued[0]["save"] is False, "the watch row keeps the result; failures are kept"
