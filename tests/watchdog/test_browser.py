"""The fleet and incident pages in Debian's headless Chromium: the fleet table updates in
place, and the pages fit a 390 px window. Screenshots: artifacts/screenshots/watchdog-*.png."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from tests.browser import PASSWORD, expect, login, overflow, shot
from tests.doubles.watch_host import FakeHostTransport, proc
from tests.watchdog.helpers import UNIT, healthy_fake, make_host
from tests.watchdog.test_pages import checked
from units.roles import ADMIN, ensure_roles
from watchdog import selectors
from watchdog.models import Incident

pytestmark = [pytest.mark.browser]


def test_the_fleet_updates_in_place_and_the_pages_fit_a_phone(
    live_server: Any, open_page: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin = get_user_model().objects.create_user("ada", password=PASSWORD)
    admin.groups.add(ensure_roles()[ADMIN])
    host = make_host("gpu-a-long-host-name-01")
    fake = healthy_fake()
    checked(host, fake)
    monkeypatch.setattr(selectors, "connect", lambda h: FakeHostTransport(fake))

    page = open_page(1440, 1000)
    login(page, live_server.url, "ada")
    page.goto(f"{live_server.url}/watchdog/")
    table = page.locator("#fleet-table")
    expect(table).to_contain_text("active (running)")
    expect(table).to_contain_text("none")
    shot(page, "watchdog-01-fleet-healthy")
    page.evaluate("window.notReloaded = true")

    # The next check finds the service stopped and its EngineCore left on GPU 0.
    fake.units[UNIT].active, fake.units[UNIT].sub = "inactive", "dead"
    fake.hold_gpu(4242, 0, 128_000, proc(4242, cgroup="/init.scope"))
    fake.write_unit(UNIT, "[Service]\nExecStart=/usr/bin/vllm serve m --port 8001 --edited\n")
    checked(host, fake)
    expect(table).to_contain_text("3 open", timeout=10_000)
    expect(table).to_contain_text("changed on the host")
    assert page.evaluate("window.notReloaded") is True
    shot(page, "watchdog-02-fleet-incidents-in-place")

    phone = open_page(390, 844)
    login(phone, live_server.url, "ada")
    drift = Incident.objects.get(kind="drift")
    for name, path in (
        ("fleet", "/watchdog/"),
        ("incidents", "/watchdog/incidents/"),
        ("drift", f"/watchdog/incidents/{drift.pk}/"),
        ("host", f"/deploys/hosts/{host.pk}/"),
    ):
        phone.goto(live_server.url + path)
        if name == "host":
            expect(phone.locator("#host-live")).to_contain_text("vllm-a.service")
        shot(phone, f"watchdog-03-phone-{name}")
        assert overflow(phone) is None
