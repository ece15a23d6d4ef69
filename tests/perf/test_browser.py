"""The results page in Debian's headless Chromium: charts drawn, two runs side by side,
an admin accepts the faster run as the new baseline. Screenshots go to
`artifacts/screenshots/perf-*.png` (look at them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from deploys.models import Host
from perf.models import Baseline
from perf.services import accept_baseline
from tests.browser import PASSWORD, expect, login, overflow, shot
from tests.perf.factories import stored_run
from tests.units.factories import baseline as profile_data
from units.roles import ADMIN, ensure_roles
from units.services import profile_create

pytestmark = [pytest.mark.browser]


def test_an_admin_reads_the_charts_compares_two_runs_and_accepts_a_baseline(
    live_server: object, open_page: Callable[..., Any]
) -> None:
    page = open_page()
    admin = get_user_model().objects.create_user("ada", password=PASSWORD)
    admin.groups.add(ensure_roles()[ADMIN])
    profile = profile_create(data=profile_data(), created_by=admin)
    host = Host.objects.create(name="gpu-a", address="127.0.0.1", host_key="ssh-ed25519 AAAA")
    first = stored_run(profile, host, 74.0, seed=0)
    accept_baseline(run=first, actor=None, reason="first measurement")
    stored_run(profile, host, 74.6, seed=1)
    faster = stored_run(profile, host, 78.0, seed=2)
    variant = stored_run(profile, host, 74 * 0.85, accept=18.0, seed=3)

    login(page, live_server.url, "ada", PASSWORD)  # type: ignore[attr-defined]
    page.click("text=Benchmarks")  # type: ignore[attr-defined]
    page.click("text=Results")  # type: ignore[attr-defined]
    expect(page.locator("svg.chart")).to_have_count(4)  # type: ignore[attr-defined]
    expect(page.locator("h1")).to_have_text(f"{profile.name} on gpu-a")  # type: ignore[attr-defined]
    page.select_option("select[name=a]", str(first.pk))  # type: ignore[attr-defined]
    page.select_option("select[name=b]", str(variant.pk))  # type: ignore[attr-defined]
    page.click("text=Compare")  # type: ignore[attr-defined]
    side = page.locator(".side-by-side > div")  # type: ignore[attr-defined]
    expect(side).to_have_count(2)
    expect(side.nth(1)).to_contain_text("Regressed")
    shot(page, "perf-01-results")
    assert overflow(page) is None
    row = page.locator(f"tr:has(td:text-is('#{faster.pk}'))")  # type: ignore[attr-defined]
    row.locator("input[name=reason]").fill("driver update, re-measured")
    row.locator("text=Accept as baseline").click()
    expect(page.locator(".messages")).to_contain_text(f"Run #{faster.pk} is now the baseline")  # type: ignore[attr-defined]
    shot(page, "perf-02-new-baseline")
    assert Baseline.objects.get().run == faster
    narrow = open_page(width=820, height=1000)
    login(narrow, live_server.url, "ada", PASSWORD)  # type: ignore[attr-defined]
    narrow.goto(page.url)
    expect(narrow.locator("svg.chart")).to_have_count(4)
    shot(narrow, "perf-03-narrow")
    assert overflow(narrow) is None
