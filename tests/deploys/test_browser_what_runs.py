"""The host and profile pages in Debian's headless Chromium after a regressed deploy and a
rollback (docs/architecture.md, "What runs where"), at a desk's width and a phone's.
Screenshots: artifacts/screenshots/what-runs-*.png (look at them)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from deploys.models import DeployRequest, Host
from deploys.services.deploy_requests import deploy_request_create
from tests.browser import PASSWORD, expect, login, overflow, shot
from tests.deploys.what_runs_support import FAST, LocalSide, use_local_side
from tests.units.factories import baseline
from units.models import ServiceProfile
from units.roles import ADMIN, APPROVER, ensure_roles
from units.services import profile_create, profile_update

pytestmark = [pytest.mark.browser]
Status = DeployRequest.Status


def _deploy(side: LocalSide, profile: ServiceProfile, host: Host, people: Any, fault: str) -> str:
    request = deploy_request_create(
        profile_version=profile.versions.order_by("-number").first(),
        host=host,
        requested_by=people[0],
        acknowledge_warnings=True,
    )
    return side.run(request, people[1], fault)


def test_host_and_profile_pages_name_v1_after_v2_regressed_and_was_rolled_back(
    live_server: Any, open_page: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    side = use_local_side(monkeypatch, LocalSide())
    users = get_user_model().objects
    ada = users.create_user("ada", password=PASSWORD)
    ada.groups.add(ensure_roles()[ADMIN])
    alice = users.create_user("alice")
    alice.groups.add(ensure_roles()[APPROVER])
    people = (ada, users.get(pk=alice.pk))
    host = Host.objects.create(name="gpu-a1", address="localhost", transport="local")
    kimi = profile_create(data=baseline(name="vllm-kimi-k25-int4", **FAST), created_by=None)
    assert _deploy(side, kimi, host, people, "") == Status.SUCCEEDED
    profile_update(profile=kimi, data={"max_num_seqs": 32}, updated_by=None)
    assert _deploy(side, kimi, host, people, "regress") == Status.ROLLED_BACK
    regressed = DeployRequest.objects.latest("pk")

    for width, height, name in ((1400, 1000, "desk"), (390, 844, "phone")):
        page = open_page(width, height)
        login(page, live_server.url, "ada")
        page.goto(f"{live_server.url}/deploys/hosts/{host.pk}/")
        row = page.locator(f'tr[data-unit="{kimi.name}"]')
        expect(row.locator("td.running")).to_contain_text(f"{kimi.name} v1")
        expect(row.locator("td.running")).not_to_contain_text("v2")
        expect(row.locator("td.running")).to_contain_text(
            f"as read at the end of job #{regressed.pk}"
        )
        expect(row.locator("td.last-good")).to_have_text("this one")
        options = row.locator("select[name=push] option")
        expect(options).to_have_count(1)
        expect(options.first).to_have_text(f"{kimi.name} v2 — regressed (#{regressed.pk})")
        assert overflow(page) is None, overflow(page)
        shot(page, f"what-runs-01-host-{name}")

        page.goto(f"{live_server.url}/profiles/{kimi.pk}/")
        running = page.locator("table.running-on")
        expect(running).to_contain_text("v1")
        expect(running).to_contain_text("last known good")
        expect(running).not_to_contain_text("v2")
        expect(running).to_contain_text("gpu-a1")
        expect(page.locator("table.version-history")).to_contain_text("regressed")
        assert overflow(page) is None, overflow(page)
        page.locator("#running-on").scroll_into_view_if_needed()
        shot(page, f"what-runs-02-profile-{name}")
        page.close()
