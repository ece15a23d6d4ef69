"""The sweep form and the version comparison in Debian's headless Chromium at 1400, 900
and 390 px: an operator checks a grid (rejected points with their reasons, the estimate),
creates the candidates and lands on their comparison; a viewer reads candidates against
production (Chart.js draws both charts, the reference and the Pareto front in the legend,
the table beside). Screenshots: `artifacts/screenshots/sweep-*.png` (look at them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from deploys.models import Host
from perf.services import accept_baseline, record_run
from tests.browser import PASSWORD, expect, login, overflow, shot
from tests.perf.factories import synthetic_result
from tests.units.factories import baseline as profile_data
from units.models import ServiceProfile
from units.roles import OPERATOR, VIEWER, ensure_roles
from units.services import profile_create, profile_update

pytestmark = [pytest.mark.browser]
WIDTHS = (1400, 900, 390)


def _host() -> Host:
    return Host.objects.create(
        name="gpu-a", address="127.0.0.1", host_key="ssh-ed25519 AAAA", vllm_version="0.16.0"
    )


def test_an_operator_checks_a_sweep_and_creates_its_candidates(
    live_server: object, open_page: Callable[..., Any]
) -> None:
    olga = get_user_model().objects.create_user("olga", password=PASSWORD)
    olga.groups.add(ensure_roles()[OPERATOR])
    profile = profile_create(data=profile_data(), created_by=olga)
    _host()
    for width in WIDTHS:
        page = open_page(width=width, height=1100)
        login(page, live_server.url, "olga", PASSWORD)  # type: ignore[attr-defined]
        page.goto(f"{live_server.url}/profiles/{profile.pk}/")  # type: ignore[attr-defined]
        page.click("text=Sweep…")
        expect(page.locator("h1")).to_have_text(f"Sweep {profile.name}")
        page.select_option("#id_host", label="gpu-a")
        page.check("input[name=methods][value=suffix]")
        page.fill("#id_num_speculative_tokens", "3, x")
        page.click("text=Check the points")
        expect(page.locator(".field.has-issues")).to_contain_text("“x” is not a whole number")
        shot(page, f"sweep-01-form-error-{width}")
        assert overflow(page) is None, overflow(page)
        page.fill("#id_num_speculative_tokens", "3, 5")
        page.fill("#id_prompt_lookup_min", "2, 9")
        page.fill("#id_flags", "--max-num-seqs 32")
        page.click("text=Check the points")
        points = page.locator("table.sweep-points")
        expect(points).to_contain_text("n-gram k=3 lookup 2–4 --max-num-seqs 32")
        expect(points).to_contain_text("Prompt lookup min (9) is larger than max (4)")
        expect(page.locator("table.sweep-points tr.rejected")).to_have_count(2)
        expect(page.locator("table.sweep-points tr.accepted")).to_have_count(4)
        expect(page.locator(".estimate")).to_contain_text("4 variants; no estimate yet")
        shot(page, f"sweep-02-points-{width}")
        assert overflow(page) is None, overflow(page)
    expect(page.locator("#id_clone_name")).to_have_value(f"{profile.name}-sweep1")
    page.fill("#id_clone_name", "kimi-sweep1")
    page.click("text=Create candidates")
    expect(page.locator("h1")).to_contain_text("Versions compared on")
    expect(page.locator(".messages")).to_contain_text("Created 4 candidates (kimi-sweep1 v2")
    expect(page.locator("main")).to_contain_text("Not measured on gpu-a yet")
    shot(page, "sweep-03-created-390")
    assert overflow(page) is None, overflow(page)
    clone = ServiceProfile.objects.get(name="kimi-sweep1")
    assert clone.versions.count() == 5


def test_a_viewer_compares_candidate_versions_with_production_at_three_widths(
    live_server: object, open_page: Callable[..., Any]
) -> None:
    vic = get_user_model().objects.create_user("vic", password=PASSWORD)
    vic.groups.add(ensure_roles()[VIEWER])
    profile = profile_create(data=profile_data(), created_by=None)
    host = _host()
    production = profile.versions.get()
    versions = [production]
    for k in (3, 5):
        saved = profile_update(
            profile=profile,
            data={"spec_method": "ngram", "spec_num_tokens": k, "spec_prompt_lookup_max": 4},
            updated_by=None,
        )
        assert saved is not None
        versions.append(saved)
    ref = record_run(
        result=synthetic_result(74.0, seed=0),
        profile=profile,
        host=host,
        profile_version=production,
    )
    accept_baseline(run=ref, actor=None, reason="production")
    for i, (version, speed) in enumerate(zip(versions[1:], (74 * 0.87, 74 * 0.84), strict=True)):
        result = synthetic_result(speed, accept=6.0, seed=i + 1)
        for level in result.levels:
            assert level.spec_decode is not None
            level.spec_decode.per_position_acceptance_rates = [0.3, 0.1, 0.02]
        record_run(result=result, profile=profile, host=host, profile_version=version)
    query = "&".join(f"version={v.pk}" for v in versions)
    for width in WIDTHS:
        page = open_page(width=width, height=1100)
        login(page, live_server.url, "vic", PASSWORD)  # type: ignore[attr-defined]
        page.goto(f"{live_server.url}/benchmarks/hosts/{host.pk}/versions/?{query}")  # type: ignore[attr-defined]
        expect(page.locator("figure.chart-box.chart-drawn")).to_have_count(2)
        expect(page.locator("ul.verdicts")).to_contain_text("slower than production at 1 stream")
        legend = page.evaluate(
            "() => document.getElementById('cmp-ttft').chart.data.datasets.map(d => d.label)"
        )
        assert legend[0].endswith("(reference)") and legend[-1].startswith("Pareto front")
        expect(page.locator("table.compare")).to_contain_text("30% · 10% · 2%")
        expect(page.locator("a:has-text('Export CSV')")).to_be_visible()
        shot(page, f"sweep-04-compare-{width}")
        assert overflow(page) is None, overflow(page)
