"""A trial's results as a person reads them (perf.trial_page): every candidate beside
production's baseline per concurrency level, in metric names a person reads, with its
verdict, the change and how sure, the load times; the JSON / CSV exports with a Name
column; the request page's words and link; job settings and readiness notes in words."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from deploys.models import DeployRequest, JobStep
from tests.deploys.trial_results_support import NGRAM, finished_seed_trial
from tests.deploys.trial_support import TrialSide
from units.services import profile_update

pytestmark = pytest.mark.django_db


def client_for(user: object) -> Client:
    c = Client()
    c.force_login(user)  # type: ignore[arg-type]
    return c


def _text(html: str) -> str:
    """The page as read: scripts (the charts' JSON) left out."""
    return re.sub(r"<script.*?</script>", "", html, flags=re.DOTALL)


def test_the_results_page_shows_the_candidate_beside_production_at_every_level(
    trial_side: TrialSide,
) -> None:
    trial = finished_seed_trial(trial_side)
    page = client_for(trial_side.requester).get(reverse("perf:trial_results", args=[trial.pk]))
    assert page.status_code == 200
    html = _text(page.content.decode())
    assert "n-gram k=5: 14.7% slower than production at 1 stream" in html, "the header's words"
    assert "Reference: <strong>vllm-kimi-k25-int4</strong> (production)" in html
    assert "slower than production at 1 stream" in html
    for name in ("Output tokens/s", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99"):
        assert name in html, name
    assert "Acceptance per draft position" in html
    assert "31% · 12% · 5% · 2% · 1%" in html
    assert "44.0 s" in html and "41.0 s" in html, "each unit's load in this trial"
    for raw in ("tpot_p50_ms", "output_tok_s", "ttft_p99_ms"):
        assert raw not in html, raw
    assert html.count('class="chart-box"') == 2
    assert html.count("<canvas") == 2


def test_the_exports_carry_every_level_with_a_name_column(trial_side: TrialSide) -> None:
    trial = finished_seed_trial(trial_side)
    olga = client_for(trial_side.requester)
    sent = olga.get(reverse("perf:trial_results_csv", args=[trial.pk]))
    assert sent.status_code == 200
    assert f'filename="trial-{trial.pk}-' in sent["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(sent.content.decode())))
    assert next(iter(rows[0])) == "Name"
    named = {(r["Name"], r["Streams"]) for r in rows}
    assert ("n-gram k=5", "1") in named and ("n-gram k=5", "8") in named
    assert ("vllm-kimi-k25-int4", "1") in named
    ngram = next(r for r in rows if r["Name"] == "n-gram k=5")
    assert ngram["Result"] == "slower"
    assert ngram["Load time (s)"] == "44.0"
    assert ngram["Acceptance per draft position"].startswith("0.310 / 0.120")
    body = json.loads(olga.get(reverse("perf:trial_results_json", args=[trial.pk])).content)
    assert body["trial"] == trial.pk and body["columns"]["name"] == "Name"
    assert {r["name"] for r in body["rows"]} == {"n-gram k=5", "vllm-kimi-k25-int4"}


def test_the_request_page_says_the_result_in_words_and_links_the_results(
    trial_side: TrialSide,
) -> None:
    trial = finished_seed_trial(trial_side)
    html = (
        client_for(trial_side.requester)
        .get(reverse("deploys:request_detail", args=[trial.pk]))
        .content.decode()
    )
    assert (
        "n-gram k=5: 14.7% slower than production at 1 stream; production restored at 73.8 tok/s"
        in html
    )
    assert reverse("perf:trial_results", args=[trial.pk]) in html
    assert "tpot_p50_ms" not in _text(html)


def test_a_rejected_candidate_is_listed_with_its_reason_on_the_results_page(
    trial_side: TrialSide,
) -> None:
    rejected = trial_side.candidate(f"{NGRAM}-bad")
    trial_side.script.rejected.add(f"{NGRAM}-bad.service")
    trial = trial_side.run(trial_side.request(rejected))
    html = (
        client_for(trial_side.requester)
        .get(reverse("perf:trial_results", args=[trial.pk]))
        .content.decode()
    )
    assert "Rejected by the host&#x27;s vLLM" in html
    assert "unknown method" in html


def test_a_trials_job_settings_read_as_words_not_as_python_dicts(
    trial_side: TrialSide,
) -> None:
    trial = trial_side.request(trial_side.candidate(NGRAM), promote_threshold=10)
    html = (
        client_for(trial_side.approver)
        .get(reverse("deploys:request_detail", args=[trial.pk]))
        .content.decode()
    )
    table = html[html.index('aria-label="Job settings"') :]
    table = table[: table.index("</table>")]
    assert "{" not in table and "[" not in table, table
    assert "trial candidates" not in table
    assert "Trial candidate 1" in table
    assert f"{NGRAM}.service" in table
    assert "Trial: promote at (%)" in table


def test_each_readiness_of_a_trial_shows_its_own_units_budget_and_last_load(
    trial_side: TrialSide,
) -> None:
    earlier = finished_seed_trial(trial_side)
    longer = profile_update(
        profile=earlier.candidates.get().profile_version.profile,
        data={"deploy_ready_timeout_sec": 2700},
        updated_by=trial_side.requester,
    )
    assert longer is not None
    trial = trial_side.run(trial_side.request(longer))
    html = (
        client_for(trial_side.requester)
        .get(reverse("deploys:request_job", args=[trial.pk]))
        .content.decode()
    )
    notes = re.findall(r'<span class="step-note">(.*?)</span>', html)
    readiness = JobStep.objects.filter(request=trial, name="readiness").count()
    assert len(notes) == readiness == 2
    assert any("budget 2,700 s" in n and "this unit" in n and "44 s" in n for n in notes), notes
    assert any("budget 60 s" in n and "this unit" in n and "41 s" in n for n in notes), notes
    assert DeployRequest.objects.filter(kind=DeployRequest.Kind.TRIAL).count() == 2


def test_the_trial_form_links_productions_benchmark_settings(trial_side: TrialSide) -> None:
    html = (
        client_for(trial_side.requester)
        .get(reverse("deploys:trial_new"), {"host": trial_side.host.pk})
        .content.decode()
    )
    settings = reverse("perf:policy", args=[trial_side.production.profile_id])
    assert f'href="{settings}">benchmark settings of {trial_side.production.profile.name}' in html
