"""Candidates against a reference run on one host (perf.trial_results) and the "compare
these versions on host H" page with its exports: verdicts in words with the change and how
sure, acceptance per draft position, load time, the charts with the reference and the
Pareto front."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from deploys.models import Host, JobStep
from perf.models import BenchRun
from perf.services import accept_baseline, record_run
from perf.trial_results import FAILED, FASTER, NO_CHANGE, SLOWER, compare_on_host, newest_runs
from tests.deploys.helpers import People
from tests.perf.factories import synthetic_result
from units.models import ProfileVersion, ServiceProfile
from units.services import profile_update

pytestmark = pytest.mark.django_db


@pytest.fixture
def versions(
    profile: ServiceProfile, people: People, version: ProfileVersion
) -> list[ProfileVersion]:
    """Production v1, then three candidates (v2 n-gram k=3, v3 k=5, v4 k=8)."""
    out = [version]
    for k in (3, 5, 8):
        saved = profile_update(
            profile=profile,
            data={"spec_method": "ngram", "spec_num_tokens": k, "spec_prompt_lookup_max": 4},
            updated_by=people.olga,
        )
        assert saved is not None
        out.append(saved)
    return out


def _run(version: ProfileVersion, host: Host, tok_s: float, **kwargs: Any) -> BenchRun:
    per_position = kwargs.pop("per_position", None)
    result = synthetic_result(tok_s, **kwargs)
    if per_position is not None:
        for level in result.levels:
            assert level.spec_decode is not None
            level.spec_decode.per_position_acceptance_rates = list(per_position)
    return record_run(result=result, profile=version.profile, host=host, profile_version=version)


@pytest.fixture
def runs(versions: list[ProfileVersion], host: Host, make_request: Any) -> dict[str, BenchRun]:
    production = _run(versions[0], host, 74.0, seed=0)
    accept_baseline(run=production, actor=None, reason="production")
    slower = _run(versions[1], host, 74 * 0.85, accept=6.0, seed=1, per_position=[0.3, 0.1, 0.02])
    request = make_request(profile_version=versions[-1])  # any request: its readiness step
    slower.request = request
    slower.save(update_fields=["request"])
    JobStep.objects.create(
        request=request,
        name="readiness",
        status=JobStep.Status.SUCCEEDED,
        result={"ready_after_s": 42.5},
    )
    same = _run(versions[2], host, 74.3, seed=2)
    faster = _run(versions[3], host, 90.0, accept=40.0, seed=3)
    return {"production": production, "slower": slower, "same": same, "faster": faster}


def test_each_candidate_gets_a_verdict_word_the_change_and_how_sure(
    host: Host, runs: dict[str, BenchRun]
) -> None:
    cmp = compare_on_host(host, runs["production"], [runs["slower"], runs["same"], runs["faster"]])
    assert cmp.reference is not None and cmp.reference.item.run == runs["production"]
    words = {c.item.run.pk: c for c in cmp.candidates}
    slower, same, faster = (words[runs[k].pk] for k in ("slower", "same", "faster"))
    assert (slower.word, same.word, faster.word) == (SLOWER, NO_CHANGE, FASTER)
    assert slower.change_pct == pytest.approx(-15, abs=2)
    assert faster.change_pct == pytest.approx(21.6, abs=2)
    assert "slower than production at 1 stream" in slower.item.headline
    assert "faster than production" in faster.item.headline
    assert slower.item.certainty  # how sure, in words
    assert slower.load_s == 42.5 and same.load_s is None
    assert slower.item.levels[0].per_position == (0.3, 0.1, 0.02)
    assert slower.badge == "error" and faster.badge == "ok"


def test_a_run_that_did_not_complete_is_failed(host: Host, runs: dict[str, BenchRun]) -> None:
    broken = runs["same"]
    broken.incomplete = True
    broken.save(update_fields=["incomplete"])
    cmp = compare_on_host(host, runs["production"], [broken])
    assert cmp.candidates[0].word == FAILED


def test_the_charts_draw_the_reference_dashed_and_mark_the_pareto_front(
    host: Host, runs: dict[str, BenchRun]
) -> None:
    cmp = compare_on_host(host, runs["production"], [runs["slower"], runs["faster"]])
    ttft, concurrency = cmp.charts
    labels = [s["label"] for s in ttft.spec["series"]]
    assert labels[0].endswith("(reference)") and ttft.spec["series"][0]["reference"]
    assert labels[-1] == "Pareto front"
    front = ttft.spec["series"][-1]["points"]
    assert {p["note"].split(",")[0] for p in front} <= {i.label for i in [c.item for c in cmp.rows]}
    assert concurrency.spec["x"]["title"] == "Concurrent streams"
    assert ttft.rows and ttft.columns[-1] == "Pareto front"


def test_newest_runs_names_the_versions_without_a_run(
    host: Host, versions: list[ProfileVersion], runs: dict[str, BenchRun]
) -> None:
    unmeasured = profile_update(
        profile=versions[0].profile, data={"max_num_seqs": 32}, updated_by=None
    )
    assert unmeasured is not None
    found, missing = newest_runs(host, [versions[1], unmeasured])
    assert found == [runs["slower"]] and missing == [unmeasured]


def _page_url(host: Host, versions: list[ProfileVersion], *extra: str) -> str:
    query = "&".join([*(f"version={v.pk}" for v in versions), *extra])
    return f"{reverse('perf:compare_versions', args=[host.pk])}?{query}"


def test_the_compare_page_shows_verdicts_charts_and_the_table(
    people: People, host: Host, versions: list[ProfileVersion], runs: dict[str, BenchRun]
) -> None:
    client = Client()
    client.force_login(people.vic)
    page = client.get(_page_url(host, versions)).content.decode()
    assert page.count('<figure class="chart-box"') == 2
    assert "vendor/chart.js-4.6.1.umd.min.js" in page
    assert "Reference: <strong>" in page and "(production)" in page
    assert page.count('class="badge error">slower</span>') == 2  # the list and the table
    assert "30% · 10% · 2%" in page  # acceptance per draft position
    assert "42.5 s" in page
    assert "Output tokens/s" in page and "TTFT p99" in page


def test_the_compare_page_survives_bad_ids_and_no_versions(
    people: People, host: Host, runs: dict[str, BenchRun]
) -> None:
    client = Client()
    client.force_login(people.vic)
    url = reverse("perf:compare_versions", args=[host.pk])
    assert "No version chosen" in client.get(url).content.decode()
    bad = client.get(f"{url}?version=abc&version=99999999999999999999&ref=x")
    assert bad.status_code == 200
    assert client.get(reverse("perf:compare_versions", args=[999999])).status_code == 404


def test_the_exports_carry_every_level_with_the_verdict_load_and_positions(
    people: People, host: Host, versions: list[ProfileVersion], runs: dict[str, BenchRun]
) -> None:
    client = Client()
    client.force_login(people.vic)
    query = _page_url(host, versions).split("?", 1)[1]
    body = json.loads(
        client.get(reverse("perf:compare_versions_json", args=[host.pk]) + "?" + query).content
    )
    slower = [r for r in body["rows"] if r["run"] == runs["slower"].pk]
    assert [r["concurrency"] for r in slower] == [1, 8]
    assert slower[0]["verdict_word"] == "slower" and slower[0]["load_s"] == 42.5
    assert slower[0]["acceptance_per_position"] == [0.3, 0.1, 0.02]
    assert body["columns"]["verdict_word"] == "Result"
    text = client.get(reverse("perf:compare_versions_csv", args=[host.pk]) + "?" + query)
    rows = list(csv.DictReader(io.StringIO(text.content.decode())))
    assert len(rows) == 8  # 4 runs × 2 levels
    mine = next(r for r in rows if r["Run"] == str(runs["slower"].pk))
    assert mine["Result"] == "slower"
    assert mine["Acceptance per draft position"] == "0.300 / 0.100 / 0.020"
