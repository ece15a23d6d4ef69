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
from units.roles import ADMIN, OPERATOR, VIEWER, ensure_roles
from units.services import profile_create, profile_update
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


# -- a drop-in on the incident page -------------------------------------------------------


def test_a_drop_in_drift_shows_its_path_and_text_and_offers_no_take_in(
    admin_client: Client,
) -> None:
    host, _, text = deployed()
    fake = healthy_fake(text)
    path = f"/etc/systemd/system/{UNIT}.service.d/override.conf"
    fake.files[path] = b"[Service]\nEnvironment=VLLM_USE_V1=0\n"
    checked(host, fake)
    [incident] = Incident.objects.filter(kind="drift")
    page = admin_client.get(f"/watchdog/incidents/{incident.pk}/").content.decode()
    assert path in page and "Environment=VLLM_USE_V1=0" in page
    assert "Take the host's text in" not in page
    assert "Restore the approved text" not in page
    assert "Remove the drop-in" in page
    refused = admin_client.post(f"/watchdog/incidents/{incident.pk}/take-in/", follow=True)
    assert "a drop-in has no unit text to take in" in refused.content.decode()


# -- the version running, by its text -------------------------------------------------------


def test_the_fleet_names_the_version_the_hosts_text_is_and_its_hash(admin_client: Client) -> None:
    host, version, text = deployed()
    checked(host, healthy_fake(text))
    sha = sha256_hex(text.encode())
    page = admin_client.get("/watchdog/").content.decode()
    assert f"{version.profile.name} v1 · {sha[:8]}" in page


def test_the_fleet_names_the_version_on_the_host_not_the_one_last_pushed(
    admin_client: Client,
) -> None:
    host, version, _ = deployed()
    v2 = profile_update(profile=version.profile, data={"max_num_seqs": 32}, updated_by=None)
    assert v2 is not None
    checked(host, healthy_fake(v2.unit_text))  # v2's text on the host; v1 was pushed
    page = admin_client.get("/watchdog/").content.decode()
    assert f"{version.profile.name} v2 · {sha256_hex(v2.unit_text.encode())[:8]}" in page
    assert f"{version.profile.name} v1 ·" not in page


def test_a_text_that_is_no_version_is_named_not_a_known_version(admin_client: Client) -> None:
    host, _, text = deployed()
    edited = text + "# by hand\n"
    checked(host, healthy_fake(edited))
    page = admin_client.get("/watchdog/").content.decode()
    assert f"not a known version · {sha256_hex(edited.encode())[:8]}" in page


# -- a host's watch settings ---------------------------------------------------------------


def role_client(role: str, name: str) -> Client:
    user = get_user_model().objects.create_user(name)
    user.groups.add(ensure_roles()[role])
    client = Client()
    client.force_login(user)
    return client


def watch_of(host: Host) -> HostWatch:
    return HostWatch.objects.create(host=host, next_due=timezone.now())


def test_an_operator_changes_a_hosts_period_pause_window_and_canary_audited() -> None:
    host = make_host()
    watch = watch_of(host)
    client = role_client(OPERATOR, "olga")
    url = f"/watchdog/hosts/{host.pk}/settings/"
    form = client.get(url).content.decode()
    assert 'name="period_s"' in form and 'name="canary"' in form
    response = client.post(
        url, {"period_s": "120", "enabled": "", "hung_window_s": "90", "canary": "on"}
    )
    assert response.status_code == 302
    watch.refresh_from_db()
    assert (watch.period_s, watch.enabled, watch.hung_window_s, watch.canary) == (
        120,
        False,
        90,
        True,
    )
    [event] = AuditEvent.objects.filter(kind="watchdog.settings_changed")
    assert event.payload["changes"]["period_s"] == {"from": 30, "to": 120}
    assert event.payload["changes"]["enabled"] == {"from": True, "to": False}
    assert event.payload["changes"]["canary"] == {"from": False, "to": True}
    assert event.host_name == host.name and event.actor_id is not None
    assert "paused" in client.get("/watchdog/").content.decode()
    host_page = client.get(f"/deploys/hosts/{host.pk}/").content.decode()
    assert "Watching is paused" in host_page and url in host_page


def test_watch_settings_out_of_bounds_are_refused_with_clear_errors() -> None:
    host = make_host()
    watch = watch_of(host)
    client = role_client(OPERATOR, "olga")
    url = f"/watchdog/hosts/{host.pk}/settings/"
    page = client.post(url, {"period_s": "2", "enabled": "on", "hung_window_s": "100000"})
    assert page.status_code == 200
    text = page.content.decode()
    assert "at least 5 seconds" in text and "at most 3600 seconds" in text
    watch.refresh_from_db()
    assert watch.period_s == 30 and watch.hung_window_s is None
    assert not AuditEvent.objects.filter(kind="watchdog.settings_changed").exists()


def test_a_viewer_sees_the_watch_settings_but_may_not_change_them() -> None:
    host = make_host()
    watch_of(host)
    client = role_client(VIEWER, "vera")
    url = f"/watchdog/hosts/{host.pk}/settings/"
    page = client.get(url).content.decode()
    assert "Your roles let you read these settings" in page
    assert client.post(url, {"period_s": "60", "enabled": "on"}).status_code == 403
    assert HostWatch.objects.get(host=host).period_s == 30


def test_saving_unchanged_settings_records_nothing() -> None:
    host = make_host()
    watch_of(host)
    client = role_client(ADMIN, "ada2")
    url = f"/watchdog/hosts/{host.pk}/settings/"
    assert client.post(url, {"period_s": "30", "enabled": "on"}).status_code == 302
    assert not AuditEvent.objects.filter(kind="watchdog.settings_changed").exists()


def test_a_shorter_period_makes_the_host_due_within_it_not_after_the_old_one() -> None:
    host = make_host()
    watch = HostWatch.objects.create(
        host=host, next_due=timezone.now() + timedelta(hours=1), period_s=3600
    )
    client = role_client(OPERATOR, "olga")
    client.post(f"/watchdog/hosts/{host.pk}/settings/", {"period_s": "30", "enabled": "on"})
    watch.refresh_from_db()
    assert watch.next_due <= timezone.now() + timedelta(seconds=31)
