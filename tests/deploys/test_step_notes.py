"""The job page's readiness step shows its budget and how long the last load on this host
took (deploys.step_notes), read from earlier jobs' JobStep rows."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from deploys.models import DeployRequest, JobStep
from deploys.step_notes import last_load, readiness_note
from tests.deploys.helpers import People

pytestmark = pytest.mark.django_db


def _steps(request: DeployRequest, ready_after: float, journal_ready: float = 0.0) -> None:
    done = timezone.now() - timedelta(minutes=5)
    JobStep.objects.create(
        request=request,
        name="journal_check",
        status=JobStep.Status.SUCCEEDED,
        finished_at=done,
        result={"ready_after_s": journal_ready} if journal_ready else {"window_s": 10},
    )
    JobStep.objects.create(
        request=request,
        name="readiness",
        status=JobStep.Status.SUCCEEDED,
        finished_at=done,
        result={"ready_after_s": ready_after},
    )


def test_the_readiness_step_shows_its_budget_and_the_last_load_on_this_host(
    people: People, make_request: Callable[..., DeployRequest]
) -> None:
    earlier = make_request()
    _steps(earlier, 41.7)
    now = make_request()
    budget = now.job_settings["pipeline"]["ready_timeout_s"]
    note = readiness_note(now)
    assert note == (
        f"budget {budget:,.0f} s · the last load of this unit on this host took 42 s "
        f"(#{earlier.pk})"
    )
    JobStep.objects.create(request=now, name="readiness", status=JobStep.Status.RUNNING)
    client = Client()
    client.force_login(people.vic)
    page = client.get(reverse("deploys:request_job", args=[now.pk])).content.decode()
    assert note in page


def test_a_load_that_answered_during_the_journal_check_counts_from_there(
    make_request: Callable[..., DeployRequest],
) -> None:
    earlier = make_request()
    assert readiness_note(earlier).endswith("no earlier load on this host to go by")
    _steps(earlier, 0, journal_ready=8.2)  # "ready already during the journal check"
    load = last_load(earlier.host_id, unit_name=earlier.unit_name)
    assert load is not None and load.seconds == pytest.approx(8.2)
    assert last_load(earlier.host_id, before=earlier.pk) is None  # not its own


def test_the_benchmark_step_header_says_the_result_in_words(
    people: People, make_request: Callable[..., DeployRequest]
) -> None:
    request = make_request()
    JobStep.objects.create(
        request=request,
        name="benchmark",
        status=JobStep.Status.FAILED,
        finished_at=timezone.now(),
        result={
            "outcome": "regressed",
            "reason": "slower than baseline run #3 (threshold 5%): output_throughput …",
            "summary": "14.7% slower than the baseline at 1 stream",
        },
    )
    client = Client()
    client.force_login(people.vic)
    page = client.get(reverse("deploys:request_job", args=[request.pk])).content.decode()
    assert '<span class="small step-summary">14.7% slower than the baseline at 1 stream' in page
    assert "output_throughput" not in page  # the summary stands in the header, not the keys
