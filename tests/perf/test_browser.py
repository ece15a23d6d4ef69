"""The results pages and the benchmark settings form in Debian's headless Chromium, at
1400, 900 and 390 px: Chart.js draws every chart (legend, tooltips, tick labels that do
not overlap), the tables stay beside them, two runs side by side, runs of two profiles
against a reference, an admin accepts a baseline, an operator saves the settings.
Screenshots go to `artifacts/screenshots/perf-*.png` (look at them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from deploys.models import Host
from perf.models import Baseline, BenchPolicy
from perf.services import accept_baseline
from tests.browser import PASSWORD, expect, login, overflow, shot
from tests.perf.factories import stored_run
from tests.units.factories import baseline as profile_data
from tests.units.factories import ngram
from units.roles import ADMIN, OPERATOR, ensure_roles
from units.services import profile_create

pytestmark = [pytest.mark.browser]
WIDTHS = (1400, 900, 390)

# No two tick labels of an axis overlap (Chart.js's own label boxes, measured on its canvas).
TICKS_APART = """([id, axis]) => {
  const chart = document.getElementById(id).chart;
  const scale = chart.scales[axis];
  const ctx = chart.ctx;
  const boxes = scale.getLabelItems(chart.chartArea).map((item) => {
    const font = (item.font || (item.options && item.options.font) || {}).string;
    ctx.save(); if (font) ctx.font = font;
    const width = ctx.measureText(String(item.label)).width;
    ctx.restore();
    const [x, y] = item.options.translation;
    return axis === "x" ? [x - width / 2, x + width / 2] : [y - 6, y + 6];
  }).sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < boxes.length; i++) if (boxes[i][0] < boxes[i - 1][1]) return false;
  return boxes.length > 1;
}"""


def _drawn(page: Any, count: int) -> None:
    expect(page.locator("figure.chart-box.chart-drawn")).to_have_count(count)


def _ticks_apart(page: Any, chart_id: str) -> None:
    for axis in ("x", "y"):
        assert page.evaluate(TICKS_APART, [chart_id, axis]), f"{chart_id}: {axis} ticks overlap"


def _tooltip_on_first_point(page: Any, chart_id: str) -> str:
    """Hover the chart's first point; the tooltip's text (Chart.js draws it on the canvas)."""
    box = page.evaluate(
        """(id) => { const c = document.getElementById(id).chart;
        const p = c.getDatasetMeta(0).data[0]; const r = c.canvas.getBoundingClientRect();
        return {x: r.left + p.x, y: r.top + p.y}; }""",
        chart_id,
    )
    page.mouse.move(box["x"], box["y"])
    page.wait_for_function(
        "(id) => document.getElementById(id).chart.tooltip.getActiveElements().length > 0",
        arg=chart_id,
    )
    return str(
        page.evaluate(
            "(id) => document.getElementById(id).chart.tooltip.body"
            ".map(b => b.lines.join(' ')).join(' ')",
            chart_id,
        )
    )


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
    for seed in range(1, 12):  # enough runs that the x axis must skip labels
        stored_run(profile, host, 74.0 + seed * 0.1, seed=seed)
    faster = stored_run(profile, host, 78.0, seed=20)
    variant = stored_run(profile, host, 74 * 0.85, accept=18.0, seed=21)

    login(page, live_server.url, "ada", PASSWORD)  # type: ignore[attr-defined]
    page.click("text=Benchmarks")
    page.click("text=Results")
    expect(page.locator("h1")).to_have_text(f"{profile.name} on gpu-a")
    _drawn(page, 4)
    _ticks_apart(page, "chart-deploys")
    assert "Output tokens/s" in _tooltip_on_first_point(page, "chart-deploys")
    page.select_option("select[name=a]", str(first.pk))
    page.select_option("select[name=b]", str(variant.pk))
    page.click("form.filters button")
    side = page.locator(".side-by-side > div")
    expect(side).to_have_count(2)
    expect(side.nth(1)).to_contain_text("Regressed")
    _drawn(page, 4)
    _ticks_apart(page, "chart-tpot")
    expect(page.locator("#chart-tpot table")).to_contain_text("p90")
    shot(page, "perf-01-results")
    assert overflow(page) is None
    row = page.locator(f"tr:has(td:text-is('#{faster.pk}'))")
    row.locator("input[name=reason]").fill("driver update, re-measured")
    row.locator("text=Accept as baseline").click()
    expect(page.locator(".messages")).to_contain_text(f"Run #{faster.pk} is now the baseline")
    assert Baseline.objects.get().run == faster
    for width in WIDTHS[1:]:
        narrow = open_page(width=width, height=1000)
        login(narrow, live_server.url, "ada", PASSWORD)  # type: ignore[attr-defined]
        narrow.goto(page.url)
        _drawn(narrow, 4)
        _ticks_apart(narrow, "chart-deploys")
        shot(narrow, f"perf-02-results-{width}")
        assert overflow(narrow) is None


def test_runs_of_two_profiles_against_a_reference_on_one_host_at_three_widths(
    live_server: object, open_page: Callable[..., Any]
) -> None:
    admin = get_user_model().objects.create_user("ada", password=PASSWORD)
    admin.groups.add(ensure_roles()[ADMIN])
    production = profile_create(data=profile_data(), created_by=admin)
    variant = profile_create(data=ngram(name="kimi-ngram-k5"), created_by=admin)
    host = Host.objects.create(name="gpu-a", address="127.0.0.1", host_key="ssh-ed25519 AAAA")
    reference = stored_run(production, host, 74.0, seed=0)
    accept_baseline(run=reference, actor=None, reason="production")
    slower = stored_run(variant, host, 74 * 0.853, accept=18.0, seed=1)
    faster = stored_run(variant, host, 80.0, seed=2)
    for width in WIDTHS:
        page = open_page(width=width, height=1100)
        login(page, live_server.url, "ada", PASSWORD)  # type: ignore[attr-defined]
        page.goto(f"{live_server.url}/benchmarks/")  # type: ignore[attr-defined]
        page.click("text=Compare runs on gpu-a")
        expect(page.locator("h1")).to_have_text("Benchmarks on gpu-a")
        page.check(f"input[name=run][value='{slower.pk}']")
        page.check(f"input[name=run][value='{faster.pk}']")
        page.check(f"input[name=ref][value='{reference.pk}']")
        page.click("text=Compare the chosen runs")
        _drawn(page, 2)
        table = page.locator("table.compare")
        expect(table).to_contain_text(f"slower than reference run #{reference.pk}")
        expect(table).to_contain_text(f"faster than reference run #{reference.pk}")
        legend = page.evaluate(
            "() => document.getElementById('chart-ttft').chart.data.datasets.map(d => d.label)"
        )
        assert legend[0].endswith("(reference)") and legend[-1].startswith("Pareto front")
        _ticks_apart(page, "chart-ttft")
        _ticks_apart(page, "chart-concurrency")
        assert "tok/s" in _tooltip_on_first_point(page, "chart-ttft")
        expect(page.locator("a:has-text('Export CSV')")).to_be_visible()
        shot(page, f"perf-03-host-{width}")
        assert overflow(page) is None, overflow(page)


def test_an_operator_saves_the_benchmark_settings_from_the_profile_page(
    live_server: object, open_page: Callable[..., Any]
) -> None:
    olga = get_user_model().objects.create_user("olga", password=PASSWORD)
    olga.groups.add(ensure_roles()[OPERATOR])
    profile = profile_create(data=profile_data(), created_by=olga)
    for i, width in enumerate(WIDTHS):
        page = open_page(width=width, height=1100)
        login(page, live_server.url, "olga", PASSWORD)  # type: ignore[attr-defined]
        page.goto(f"{live_server.url}/profiles/{profile.pk}/")  # type: ignore[attr-defined]
        page.click("text=Benchmark settings")
        expect(page.locator("h1")).to_have_text(f"Benchmark settings of {profile.name}")
        page.fill("#id_concurrency", "1, 8, x")
        page.click("text=Save the benchmark settings")
        expect(page.locator(".field.has-issues")).to_contain_text("Whole numbers")
        shot(page, f"perf-04-settings-error-{width}")
        page.fill("#id_concurrency", "1, 8, 32")
        page.fill("#id_repeats", str(3 + i))
        page.click("text=Save the benchmark settings")
        expect(page.locator(".messages")).to_contain_text("Benchmark settings of")
        shot(page, f"perf-05-settings-{width}")
        assert overflow(page) is None, overflow(page)
        assert BenchPolicy.objects.get(profile=profile).repeats == 3 + i
