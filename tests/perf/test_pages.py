"""The results pages: who sees what, the charts, two runs side by side, accepting a baseline."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from audit.models import AuditEvent
from perf.models import Baseline, BenchRun
from perf.services import BASELINE_ACCEPTED, accept_baseline
from tests.deploys.helpers import People
from tests.perf.factories import stored_run
from units.models import ServiceProfile

pytestmark = pytest.mark.django_db


@pytest.fixture
def history(profile: ServiceProfile, host: object) -> list[BenchRun]:
    """Baseline 74 tok/s, two deploys at the same speed, the n-gram variant 15% slower."""
    runs = [stored_run(profile, host, 74.0, seed=0)]
    accept_baseline(run=runs[0], actor=None, reason="first")
    runs.append(stored_run(profile, host, 74.5, seed=1))
    runs.append(stored_run(profile, host, 73.8, seed=2))
    runs.append(stored_run(profile, host, 74 * 0.85, accept=18.0, seed=3))
    return runs


def _client(user: object) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_results_page_shows_runs_charts_and_the_regression(
    people: People, history: list[BenchRun]
) -> None:
    run = history[0]
    url = reverse("perf:results", args=[run.profile_id, run.host_id])
    page = _client(people.vic).get(url).content.decode()
    assert page.count("<svg") == 4  # tok/s, acceptance, TTFT and TPOT distributions
    assert "Output tokens/s across deploys" in page
    assert f"baseline {run.output_tok_s:.1f}" in page
    assert "Speculative decoding acceptance rate" in page
    assert page.count('class="badge error"') >= 2  # the regressed run in table + side-by-side
    assert f"#{history[3].pk}" in page
    assert "Accept as baseline" not in page  # a viewer only looks
    assert "Benchmarks</a>" in page  # the nav link


def test_two_chosen_runs_are_side_by_side(people: People, history: list[BenchRun]) -> None:
    a, b = history[1], history[3]
    url = reverse("perf:results", args=[a.profile_id, a.host_id]) + f"?a={a.pk}&b={b.pk}"
    page = _client(people.vic).get(url).content.decode()
    section = page.split("<h2>Side by side</h2>", 1)[1].split("<h2>Runs</h2>", 1)[0]
    assert section.count("<table") == 2
    assert f"#{a.pk} · servebench" in section and f"#{b.pk} · servebench" in section
    assert "18.0% (1.54)" in section  # acceptance rate and length of the variant


def test_an_admin_accepts_a_run_as_the_new_baseline_with_a_reason(
    people: People, history: list[BenchRun]
) -> None:
    client = _client(people.ada)
    run = history[2]
    results = reverse("perf:results", args=[run.profile_id, run.host_id])
    assert "Accept as baseline" in client.get(results).content.decode()
    response = client.post(reverse("perf:accept", args=[run.pk]), {"reason": ""})
    assert response.status_code == 302
    assert Baseline.objects.get().run == history[0]  # no reason, no change
    client.post(reverse("perf:accept", args=[run.pk]), {"reason": "new driver, re-measured"})
    assert Baseline.objects.get().run == run
    event = AuditEvent.objects.filter(kind=BASELINE_ACCEPTED).latest("pk")
    assert (event.payload["run"], event.payload["previous_run"]) == (run.pk, history[0].pk)
    assert event.actor == people.ada
    assert "new driver, re-measured" in event.payload["reason"]


def test_only_people_with_the_permission_accept_and_anonymous_users_log_in(
    people: People, history: list[BenchRun]
) -> None:
    run = history[2]
    assert (
        _client(people.olga)
        .post(reverse("perf:accept", args=[run.pk]), {"reason": "x"})
        .status_code
        == 403
    )
    response = Client().get(reverse("perf:results", args=[run.profile_id, run.host_id]))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert Baseline.objects.get().run == history[0]


def test_an_unknown_pair_is_a_404_page(people: People) -> None:
    response = _client(people.vic).get(reverse("perf:results", args=[999, 999]))
    assert response.status_code == 404
    assert "No results for this profile on this host" in response.content.decode()
