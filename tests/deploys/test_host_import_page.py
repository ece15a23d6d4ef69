"""The host page offers each unit the probe found running vLLM (and not specadmin's) for
import; a failed import says why on the host page, never a server error."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from deploys.models import Host
from tests.deploys.helpers import People
from tests.ports import refusing_port

pytestmark = pytest.mark.django_db


def _client(user: object) -> Client:
    client = Client()
    client.force_login(user)  # type: ignore[arg-type]
    return client


def test_the_host_page_offers_the_probed_foreign_vllm_units_for_import(
    host: Host, people: People
) -> None:
    Host.objects.filter(pk=host.pk).update(
        foreign_vllm_units=["vllm-hand.service"], probed_at="2026-01-01T00:00:00Z"
    )
    page = _client(people.olga).get(reverse("deploys:host_detail", args=[host.pk]))
    html = page.content.decode()
    assert "Other units there that run vLLM" in html
    assert 'name="unit_name" value="vllm-hand.service"' in html


def test_an_import_that_cannot_reach_the_host_says_why(host: Host, people: People) -> None:
    with refusing_port() as port:
        Host.objects.filter(pk=host.pk).update(address="127.0.0.1", ssh_port=port)
        response = _client(people.olga).post(
            reverse("deploys:host_import_unit", args=[host.pk]),
            {"unit_name": "vllm-hand.service"},
            follow=True,
        )
    assert response.status_code == 200
    assert "Not imported:" in response.content.decode()


def test_a_viewer_may_not_import(host: Host, people: People) -> None:
    response = _client(people.vic).post(
        reverse("deploys:host_import_unit", args=[host.pk]), {"unit_name": "x"}
    )
    assert response.status_code == 403
