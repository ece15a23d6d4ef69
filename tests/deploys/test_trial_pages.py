"""The trial pages: the form on the host page, the request page the approver reads (the
exact candidate texts, their order, the end), and the job's words once it ran."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from deploys.models import DeployRequest
from tests.deploys.trial_support import PRODUCTION, TrialSide

pytestmark = pytest.mark.django_db
NGRAM = "vllm-kimi-k25-int4-ngram"


def client_for(user: object) -> Client:
    c = Client()
    c.force_login(user)  # type: ignore[arg-type]
    return c


def test_the_form_requests_a_trial_of_the_ticked_versions_in_place_of_production(
    trial_side: TrialSide,
) -> None:
    candidate = trial_side.candidate(NGRAM)
    olga = client_for(trial_side.requester)
    url = reverse("deploys:trial_new")
    page = olga.get(url, {"host": trial_side.host.pk, "candidate": candidate.pk})
    assert page.status_code == 200
    html = page.content.decode()
    assert f'value="{PRODUCTION}"' in html, "production offered: a version specadmin knows"
    sent = olga.post(
        url + f"?host={trial_side.host.pk}",
        {
            "host": trial_side.host.pk,
            "production_unit": PRODUCTION,
            "candidates": [candidate.pk],
            "acknowledge_warnings": "on",
        },
    )
    assert sent.status_code == 302, sent.content.decode()[:2000]
    trial = DeployRequest.objects.get(kind=DeployRequest.Kind.TRIAL)
    assert [c.unit_name for c in trial.candidates.all()] == [NGRAM]


def test_the_form_can_run_the_candidates_in_productions_own_unit_file(
    trial_side: TrialSide,
) -> None:
    """The seed's experiment: the n-gram unit *in place of* production, under its name."""
    candidate = trial_side.candidate(NGRAM)
    olga = client_for(trial_side.requester)
    url = reverse("deploys:trial_new") + f"?host={trial_side.host.pk}"
    html = olga.get(url).content.decode()
    assert "In production&#x27;s own unit file" in html
    sent = olga.post(
        url,
        {
            "host": trial_side.host.pk,
            "production_unit": PRODUCTION,
            "candidates": [candidate.pk],
            "run_as": "production",
            "acknowledge_warnings": "on",
        },
    )
    assert sent.status_code == 302, sent.content.decode()[:2000]
    trial = DeployRequest.objects.get(kind=DeployRequest.Kind.TRIAL)
    assert [c.unit_name for c in trial.candidates.all()] == [PRODUCTION]


def test_the_form_refuses_an_unknown_way_to_run_the_candidates_on_its_field(
    trial_side: TrialSide,
) -> None:
    candidate = trial_side.candidate(NGRAM)
    url = reverse("deploys:trial_new") + f"?host={trial_side.host.pk}"
    page = client_for(trial_side.requester).post(
        url,
        {
            "host": trial_side.host.pk,
            "production_unit": PRODUCTION,
            "candidates": [candidate.pk],
            "run_as": "somewhere-else",
            "acknowledge_warnings": "on",
        },
    )
    assert page.status_code == 200
    assert "Select a valid choice" in page.content.decode()
    assert not DeployRequest.objects.filter(kind=DeployRequest.Kind.TRIAL).exists()


def test_the_approver_sees_each_candidates_sha256_the_order_and_the_end(
    trial_side: TrialSide,
) -> None:
    a, b = trial_side.candidate(NGRAM), trial_side.candidate("vllm-kimi-k25-int4-ngram-k3")
    trial = trial_side.request(a, b, promote_threshold=10)
    html = (
        client_for(trial_side.approver)
        .get(reverse("deploys:request_detail", args=[trial.pk]))
        .content.decode()
    )
    shas = [c.unit_sha256 for c in trial.candidates.order_by("position")]
    assert html.index(shas[0]) < html.index(shas[1])
    assert "Approve this trial: these exact units, in this order, and its end" in html
    assert "beats production by at least 10% on every gated metric" in html


def test_the_job_page_says_the_result_in_words_and_offers_to_promote_a_faster_candidate(
    trial_side: TrialSide,
) -> None:
    trial_side.script.change_pct = {f"{NGRAM}.service": 12.0}
    trial = trial_side.run(trial_side.request(trial_side.candidate(NGRAM)))
    html = (
        client_for(trial_side.requester)
        .get(reverse("deploys:request_detail", args=[trial.pk]))
        .content.decode()
    )
    assert (
        "n-gram k=5: 12.0% faster than production at 1 stream; production restored at 73.8 tok/s"
        in html
    )
    assert "Promote n-gram k=5" in html
    assert "Output tokens/s at 1 stream 12.0% better" in html
