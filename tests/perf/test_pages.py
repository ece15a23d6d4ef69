"""The results pages: who sees what, the charts, two runs side by side, accepting a baseline."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.test import Client
from django.urls import reverse

from audit.models import AuditEvent
from perf.models import Baseline, BenchRun
from perf.services import BASELINE_ACCEPTED, accept_baseline
from tests.deploys.helpers import People
from tests.perf.factories import stored_run
from tests.units.factories import ngram
from units.models import ServiceProfile
from units.services import profile_create

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
    response = _client(people.vic).get(url)
    page = response.content.decode()
    # tok/s and acceptance across deploys, TTFT and TPOT percentiles: Chart.js specs, each
    # with its table
    assert page.count('<figure class="chart-box"') == 4
    assert page.count("<canvas") == 4
    assert "Output tokens/s across deploys" in page
    assert "vendor/chart.js-4.6.1.umd.min.js" in page and "js/perf-charts.js" in page
    spec = json.loads(
        page.split('id="chart-deploys-data" type="application/json">')[1].split("</script>")[0]
    )
    baseline_line = spec["series"][1]
    assert (
        baseline_line["reference"]
        and baseline_line["label"] == f"Baseline {run.output_tok_s:.1f} tok/s"
    )
    assert [p["note"] for p in spec["series"][0]["points"]].count("regressed") == 1
    assert "Speculative decoding acceptance rate" in page
    assert "p5090" not in page and "<svg" not in page
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


@pytest.fixture
def other_profile_runs(people: People, host: object) -> list[BenchRun]:
    """The n-gram variant as its own profile on the same host, measured once."""
    variant = profile_create(data=ngram(name="kimi-ngram"), created_by=people.olga)
    return [stored_run(variant, host, 74 * 0.85, accept=18.0, seed=5)]


def test_the_host_page_compares_runs_of_several_profiles_against_a_reference(
    people: People, history: list[BenchRun], other_profile_runs: list[BenchRun]
) -> None:
    base, variant = history[0], other_profile_runs[0]
    url = reverse("perf:host", args=[base.host_id])
    page = _client(people.vic).get(url, {"run": [history[1].pk, variant.pk], "ref": base.pk})
    text = page.content.decode()
    assert page.status_code == 200
    table = text.split('aria-label="Runs compared with the reference"', 1)[1].split("</table>")[0]
    assert f"#{base.pk}" in table and "reference</span>" in table
    assert f"kimi-ngram v1 #{variant.pk}" in table
    assert f"15.0% slower than reference run #{base.pk} at 8 streams" in table
    assert "every repeat slower, but with so few repeats" in table  # 2 against 2: 1 in 6
    assert "Output tokens/s (tok/s)" in table and "TTFT p50 (ms)" in table
    assert "tpot_p50_ms" not in table  # names a person reads
    assert 'class="change worse"' in table
    assert text.count("<canvas") == 2
    ttft = json.loads(
        text.split('id="chart-ttft-data" type="application/json">')[1].split("</script>")[0]
    )
    labels = [s["label"] for s in ttft["series"]]
    assert labels[0].endswith("(reference)") and labels[-1].startswith("Pareto front")
    assert ttft["x"]["title"] == "TTFT p50 (ms)" and ttft["y"]["title"] == "Output tokens/s (tok/s)"


def test_the_comparison_exports_as_json_and_csv_with_readable_headers(
    people: People, history: list[BenchRun], other_profile_runs: list[BenchRun]
) -> None:
    base, variant = history[0], other_profile_runs[0]
    query = {"run": [variant.pk], "ref": base.pk}
    client = _client(people.vic)
    data = client.get(reverse("perf:host_export_json", args=[base.host_id]), query).json()
    assert data["columns"]["ttft_p50_ms"] == "TTFT p50 (ms)"
    rows = data["rows"]
    assert [(r["run"], r["concurrency"]) for r in rows] == [
        (base.pk, 1),
        (base.pk, 8),
        (variant.pk, 1),
        (variant.pk, 8),
    ]
    assert rows[2]["verdict"] == "regressed" and rows[2]["output_tok_s_change_pct"] < -10
    response = client.get(reverse("perf:host_export_csv", args=[base.host_id]), query)
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    table = list(csv.reader(io.StringIO(response.content.decode())))
    assert table[0][:3] == ["Run", "Profile", "Version"] and "Output tokens/s (tok/s)" in table[0]
    assert len(table) == 5
