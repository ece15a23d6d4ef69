"""The fleet, incident and host pages (watchdog.views), with a fake host behind them."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from audit.models import AuditEvent
from deploys.models import DeployRequest, Host, PushedUnit
from hostops.channel.push import sha256_hex
from tests.doubles.watch_host import FakeHost, FakeHostTransport
from tests.units.factories import baseline
from tests.watchdog.helpers import UNIT, healthy_fake, make_host
from units.services import profile_create
from watchdog import selectors, services
from watchdog.models import HostWatch, Incident
from watchdog.services import check_host

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("ada"))
    return client


def checked(host: Host, fake: FakeHost) -> None:
    """One check, its `now` stored on the host's watch as the runner stores it."""
    evaluation, _, _ = check_host(host=host, transport=FakeHostTransport(fake), history={})
    HostWatch.objects.update_or_create(
        host=host,
        defaults={
            "next_due": timezone.now() + timedelta(seconds=30),
            "last_check_at": timezone.now() - timedelta(seconds=7),
            "readings": {"history": evaluation.history, "now": evaluation.now},
        },
    )


def deployed(name: str = "gpu1", data: dict[str, Any] | None = None) -> tuple[Host, Any, str]:
    """A host where a profile's version 1 was pushed as UNIT by a request."""
    profile = profile_create(data=data or baseline(name=UNIT), created_by=None)
    version = profile.versions.get()
    host = Host.objects.create(name=name, address="127.0.0.1", transport="local", gpu_count=8)
    text = version.unit_text
    request = DeployRequest.objects.create(
        profile_version=version,
        host=host,
        unit_name=UNIT,
        unit_text=text,
        unit_sha256=sha256_hex(text.encode()),
        status=DeployRequest.Status.SUCCEEDED,
        expires_at=timezone.now(),
        requested_by=get_user_model().objects.get_or_create(username="olga")[0],
    )
    PushedUnit.objects.create(
        host=host, unit_name=UNIT, request=request, text=text, sha256=sha256_hex(text.encode())
    )
    return host, version, text


def test_the_fleet_page_shows_each_host_its_unit_gpus_and_last_check(admin_client: Client) -> None:
    host = make_host()
    checked(host, healthy_fake())
    page = admin_client.get("/watchdog/").content.decode()
    assert "gpu1" in page and "vllm-a" in page and "active (running)" in page
    assert "0 / 1123 GiB" in page and re.search(r">\d+ s ago", page)
    assert 'hx-get="/watchdog/fleet-table/"' in page, "it updates in place"
    table = admin_client.get("/watchdog/fleet-table/").content.decode()
    assert table.lstrip().startswith('<section id="fleet-table"') and "vllm-a" in table


def test_an_open_incident_is_listed_on_the_fleet_and_its_own_page(admin_client: Client) -> None:
    host = make_host()
    fake = healthy_fake()
    fake.units[UNIT].active = "failed"
    checked(host, fake)
    assert "1 open" in admin_client.get("/watchdog/").content.decode()
    [incident] = Incident.objects.all()
    listing = admin_client.get("/watchdog/incidents/").content.decode()
    assert "vllm-a.service failed" in listing
    assert (
        admin_client.get("/watchdog/incidents/?state=closed")
        .content.decode()
        .count("vllm-a.service failed")
        == 0
    )
    detail = admin_client.get(f"/watchdog/incidents/{incident.pk}/").content.decode()
    assert "Unit not running on gpu1" in detail and "open" in detail
    for query in ("state=bogus&host=x", "host=%C2%B2", "host=99999999999999999999999"):
        assert admin_client.get(f"/watchdog/incidents/?{query}").status_code == 200


def test_a_drift_incident_offers_restore_and_take_in_and_take_in_adds_a_version(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    host, version, text = deployed()
    fake = healthy_fake(text)
    fake.write_unit(UNIT, text + "# tuned by hand\n")
    checked(host, fake)
    [incident] = Incident.objects.filter(kind="drift")
    page = admin_client.get(f"/watchdog/incidents/{incident.pk}/").content.decode()
    assert "+# tuned by hand" in page
    assert (
        f"/deploys/requests/new/?profile_version={version.pk}&amp;host={host.pk}&amp;unit_name={UNIT}"
        in page
    )
    assert "Take the host's text in as a new version" in page

    monkeypatch.setattr(services, "connect_host", lambda h: FakeHostTransport(fake))
    response = admin_client.post(f"/watchdog/incidents/{incident.pk}/take-in/")
    assert response.status_code == 302
    new = version.profile.versions.order_by("-number").first()
    assert new.number == 2
    assert response["Location"].startswith(f"/deploys/requests/new/?profile_version={new.pk}")
    assert AuditEvent.objects.filter(kind="watchdog.host_text_taken_in").count() == 1
    form = admin_client.get(response["Location"]).content.decode()
    assert f'value="{UNIT}"' in form, "the request form comes filled in"


def test_taking_in_a_text_that_changed_again_is_refused_with_a_reason(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    host, _, text = deployed()
    fake = healthy_fake(text)
    fake.write_unit(UNIT, text + "# one\n")
    checked(host, fake)
    [incident] = Incident.objects.filter(kind="drift")
    fake.write_unit(UNIT, text + "# two\n")
    monkeypatch.setattr(services, "connect_host", lambda h: FakeHostTransport(fake))
    response = admin_client.post(f"/watchdog/incidents/{incident.pk}/take-in/", follow=True)
    assert "changed since the incident saw it" in response.content.decode()


def test_the_host_page_loads_live_unit_state_and_a_bounded_journal_tail(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = make_host()
    fake = healthy_fake()
    fake.journal[UNIT] = [f"line {i}" for i in range(100)] + ["x" * 5000]
    monkeypatch.setattr(selectors, "connect", lambda h: FakeHostTransport(fake))
    page = admin_client.get(f"/deploys/hosts/{host.pk}/").content.decode()
    assert f'hx-get="/watchdog/hosts/{host.pk}/live/"' in page
    live = admin_client.get(f"/watchdog/hosts/{host.pk}/live/").content.decode()
    assert "vllm-a.service" in live and "active (running)" in live
    assert 'hx-trigger="load delay:5s"' in live
    assert "line 81" in live and "line 80" not in live, "the last 20 lines"
    assert "x" * 5000 not in live and "4,780 characters not kept" in live
    fake.down = True
    assert "Cannot read" in admin_client.get(
        f"/watchdog/hosts/{host.pk}/live/"
    ).content.decode() or (
        "HostUnreachable" in admin_client.get(f"/watchdog/hosts/{host.pk}/live/").content.decode()
    )


def test_the_nav_links_the_fleet(admin_client: Client) -> None:
    assert 'href="/watchdog/"' in admin_client.get("/deploys/hosts/").content.decode()
