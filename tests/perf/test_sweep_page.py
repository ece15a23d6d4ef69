"""The sweep page: the grid form, every point checked for the host's release with the
reasons of the rejected ones, the bound and the time estimate, and "Create candidates"
(versions of a clone, then the compare page). Bad input is a clear form error, never a 500."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from deploys.models import DeployRequest, Host, JobStep
from perf import sweep_trial
from perf.services import accept_baseline
from perf.sweep_estimate import duration, sweep_estimate
from tests.deploys.helpers import People
from tests.perf.factories import stored_run
from units.models import ProfileVersion, ServiceProfile

pytestmark = pytest.mark.django_db


def _client(user: object) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _form(v: ProfileVersion, h: Host, **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "version": v.pk,
        "host": h.pk,
        "methods": ["ngram"],
        "num_speculative_tokens": "3, 5",
        "prompt_lookup_max": "4",
        "prompt_lookup_min": "2, 9",
        "draft_model": "",
        "flags": "",
        "clone_name": "kimi-sweep1",
        "action": "preview",
    }
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def test_the_sweep_form_offers_the_methods_and_says_the_bound(
    people: People, profile: ServiceProfile
) -> None:
    response = _client(people.olga).get(reverse("perf:sweep", args=[profile.pk]))
    page = response.content.decode()
    assert response.status_code == 200
    for method in ("ngram", "suffix", "eagle3", "draft_model", "mtp"):
        assert f'value="{method}"' in page
    assert 'value="deepseek_mtp"' not in page  # aliases of mtp, which is offered
    assert "At most 16 points per sweep" in page


def test_checking_lists_rejected_points_with_reasons_and_the_estimate(
    people: People, profile: ServiceProfile, version: ProfileVersion, host: Host
) -> None:
    host.vllm_version = "0.16.0"
    host.save()
    response = _client(people.olga).post(
        reverse("perf:sweep", args=[profile.pk]), _form(version, host)
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "Points for vLLM 0.16.0" in page
    assert "<strong>2</strong> accepted, <strong>2</strong> rejected" in page
    assert "Prompt lookup min (9) is larger than max (4): vLLM refuses to start." in page
    # nothing measured on this host yet
    assert (
        "2 variants; no estimate yet: no earlier load and no benchmark of production on this "
        "host to go by." in page
    )
    assert 'value="kimi-sweep1"' in page
    assert "Create candidates" in page


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"num_speculative_tokens": "3, x"}, "“x” is not a whole number"),
        ({"flags": "max-num-seqs 4"}, "“max-num-seqs” is not a vLLM flag"),
        ({"methods": None}, "This field is required."),
        ({"methods": ["nonsense"]}, "Select a valid choice."),
        ({"host": "999999"}, "Select a valid choice."),
        ({"version": "abc"}, "Select a valid choice."),
        (
            {"num_speculative_tokens": "1, 2, 3, 4, 5, 6, 7, 8, 9", "prompt_lookup_min": "1, 2"},
            "This grid has 18 points; a sweep has at most 16.",
        ),
    ],
)
def test_bad_input_is_a_clear_form_error_never_a_500(
    people: People,
    profile: ServiceProfile,
    version: ProfileVersion,
    host: Host,
    overrides: dict[str, Any],
    message: str,
) -> None:
    url = reverse("perf:sweep", args=[profile.pk])
    response = _client(people.olga).post(url, _form(version, host, **overrides))
    assert response.status_code == 400
    assert message in response.content.decode()


def test_a_version_of_another_profile_is_refused(
    people: People, profile: ServiceProfile, host: Host
) -> None:
    other = ServiceProfile.objects.create(name="other", vllm_executable="/x/vllm", model="m")
    foreign = ProfileVersion.objects.create(profile=other, number=1, data={}, unit_text="")
    url = reverse("perf:sweep", args=[profile.pk])
    response = _client(people.olga).post(url, _form(foreign, host))
    assert response.status_code == 400
    assert "Select a valid choice." in response.content.decode()


def test_candidates_the_trial_service_refuses_stay_saved_and_their_comparison_opens(
    people: People,
    profile: ServiceProfile,
    version: ProfileVersion,
    host: Host,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(**kwargs: Any) -> DeployRequest:
        raise ValidationError("kimi-k25-int4.service is not running on gpu-a.")

    monkeypatch.setattr(sweep_trial, "trial_request_create", refused)
    url = reverse("perf:sweep", args=[profile.pk])
    client = _client(people.olga)
    response = client.post(url, _form(version, host, action="create"))
    assert response.status_code == 302, response.content.decode()[:2000]
    clone = ServiceProfile.objects.get(name="kimi-sweep1")
    numbers = list(clone.versions.order_by("number").values_list("number", flat=True))
    assert numbers == [1, 2, 3]  # the clone, then the two accepted points
    assert response["Location"].startswith(reverse("perf:compare_versions", args=[host.pk]))
    page = client.get(response["Location"]).content.decode()
    assert "Not measured on gpu-a yet" in page
    assert "kimi-sweep1 v2" in page and "kimi-sweep1 v3" in page
    # only the clone's latest version can go through an ordinary deploy
    clone_v3 = clone.versions.get(number=3)
    assert page.count("deploy</a>") == 2  # production's v1 and the clone's v3
    assert f"profile_version={clone_v3.pk}&amp;host={host.pk}" in page
    assert "Created 2 candidates (kimi-sweep1 v2, v3), but no trial on gpu-a" in page
    assert "is not running on gpu-a." in page
    assert not DeployRequest.objects.exists()


def test_a_taken_clone_name_is_a_form_error(
    people: People, profile: ServiceProfile, version: ProfileVersion, host: Host
) -> None:
    url = reverse("perf:sweep", args=[profile.pk])
    response = _client(people.olga).post(
        url, _form(version, host, action="create", clone_name=profile.name)
    )
    assert response.status_code == 400
    assert "already exists" in response.content.decode()


def test_a_viewer_checks_a_sweep_but_cannot_create_candidates(
    people: People, profile: ServiceProfile, version: ProfileVersion, host: Host
) -> None:
    url = reverse("perf:sweep", args=[profile.pk])
    client = _client(people.vic)
    checked = client.post(url, _form(version, host))
    assert checked.status_code == 200
    assert "not create its candidates" in checked.content.decode()
    assert client.post(url, _form(version, host, action="create")).status_code == 403
    assert not ServiceProfile.objects.filter(name="kimi-sweep1").exists()


def test_the_estimate_adds_the_last_load_and_the_reference_benchmark_per_variant(
    people: People, profile: ServiceProfile, host: Host, make_request: Any
) -> None:
    request = make_request()
    JobStep.objects.create(
        request=request,
        name="readiness",
        status=JobStep.Status.SUCCEEDED,
        result={"ready_after_s": 40.0},
    )
    run = stored_run(profile, host, 74.0)
    accept_baseline(run=run, actor=None, reason="production")
    bench = sum(lv["duration_s"] for lv in run.result["levels"])
    estimate = sweep_estimate(host=host, profile=profile, points=3)
    assert estimate.load_s == 40.0
    assert estimate.bench_s == pytest.approx(bench)
    assert estimate.total_s == pytest.approx(3 * (40 + bench + 5) + 40 + bench)
    assert "the last load of this unit here" in estimate.load_from
    assert f"the reference run #{run.pk}" in estimate.bench_from
    assert estimate.words().startswith("3 variants × (40 s load + ")
    assert duration(3725) == "1 h 2 min" and duration(200) == "3 min 20 s"


def test_the_candidates_go_as_one_trial_request_in_order_each_under_its_own_unit(
    people: People,
    profile: ServiceProfile,
    version: ProfileVersion,
    host: Host,
    make_request: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    request = make_request()  # stands for the trial request the service would make
    calls: list[dict[str, Any]] = []

    def trial_request_create(**kwargs: Any) -> DeployRequest:
        calls.append(kwargs)
        return request

    monkeypatch.setattr(sweep_trial, "trial_request_create", trial_request_create)
    url = reverse("perf:sweep", args=[profile.pk])
    client = _client(people.olga)
    response = client.post(url, _form(version, host, action="create"))
    assert response.status_code == 302
    assert response["Location"] == reverse("deploys:request_detail", args=[request.pk])
    (call,) = calls
    assert call["host"] == host and call["requested_by"] == people.olga
    assert call["production_unit"] == profile.name
    candidates = call["candidates"]
    assert [c.version.number for c in candidates] == [2, 3]
    assert {c.version.profile.name for c in candidates} == {"kimi-sweep1"}
    assert [c.unit_name for c in candidates] == ["kimi-sweep1-v2", "kimi-sweep1-v3"]
