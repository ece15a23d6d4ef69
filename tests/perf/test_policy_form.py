"""A profile's benchmark settings on its own page (perf.views.policy_edit): editors change
them, audited; bad values are named at their field; viewers read only; a new request
carries the new settings for approval."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from audit.models import AuditEvent
from deploys.job_settings import job_settings, settings_lines
from perf.models import BenchPolicy
from perf.services import POLICY_CHANGED
from tests.deploys.helpers import People
from units.models import ProfileVersion, ServiceProfile

pytestmark = pytest.mark.django_db

GOOD = {
    "enabled": "on",
    "threshold_pct": "4",
    "repeats": "5",
    "noisy_budget_s": "600",
    "rollback_on_regression": "on",
    "client_on_host": "on",
    "endpoint": "chat",
    "prompts": "code",
    "concurrency": "1, 8, 32",
    "num_requests": "24",
    "max_tokens": "128",
    "seed": "7",
}


def _client(user: object) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_operator_changes_the_benchmark_settings_and_the_history_says_what_changed(
    people: People, profile: ServiceProfile, version: ProfileVersion
) -> None:
    url = reverse("perf:policy", args=[profile.pk])
    detail = _client(people.olga).get(reverse("units:detail", args=[profile.pk])).content.decode()
    assert f'href="{url}"' in detail  # linked from the profile page
    page = _client(people.olga).get(url).content.decode()
    assert "Regression threshold (%)" in page and 'value="1"' in page  # the defaults
    response = _client(people.olga).post(url, GOOD)
    assert response.status_code == 302
    policy = BenchPolicy.objects.get(profile=profile)
    assert (policy.concurrency, policy.repeats, policy.noisy_budget_s) == ([1, 8, 32], 5, 600)
    assert (policy.threshold_pct, policy.endpoint, policy.prompts) == (4.0, "chat", "code")
    event = AuditEvent.objects.get(kind=POLICY_CHANGED)
    assert event.actor == people.olga
    assert event.payload["changes"]["repeats"] == {"from": 3, "to": 5}
    assert event.payload["changes"]["concurrency"] == {"from": [], "to": [1, 8, 32]}
    assert "enabled" not in event.payload["changes"]  # unchanged fields are not listed
    # what a new request carries (and its approver sees)
    shown = dict(settings_lines(job_settings(profile_version=version)))
    assert shown["Benchmark: more repeats while not sure, at most (s)"] == "600"
    assert shown["Benchmark concurrency"] == "1, 8, 32"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("concurrency", "1, x", "Whole numbers separated by commas"),
        ("concurrency", "0", "Each level is between 1 and 4096"),
        ("repeats", "0", "Between 1 and 20"),
        ("noisy_budget_s", "99999", "Between 0 and 7200"),
        ("prompts", "poetry", "Select a valid choice"),
    ],
)
def test_a_bad_value_is_named_at_its_field_and_nothing_is_saved(
    people: People, profile: ServiceProfile, field: str, value: str, message: str
) -> None:
    response = _client(people.olga).post(
        reverse("perf:policy", args=[profile.pk]), {**GOOD, field: value}
    )
    assert response.status_code == 200
    assert message in response.content.decode()
    assert (
        not BenchPolicy.objects.exists()
        and not AuditEvent.objects.filter(kind=POLICY_CHANGED).exists()
    )


def test_a_viewer_reads_the_settings_but_cannot_change_them(
    people: People, profile: ServiceProfile
) -> None:
    url = reverse("perf:policy", args=[profile.pk])
    page = _client(people.vic).get(url).content.decode()
    assert "<fieldset disabled>" in page and "let you read these settings" in page
    assert _client(people.vic).post(url, GOOD).status_code == 403
    assert not BenchPolicy.objects.exists()
    assert Client().get(url).status_code == 302  # anonymous: the login page
