"""A trial in Debian's headless Chromium at 1400, 900 and 390 px: the form, the finished
seed-style trial's job page (the result in words, the steps) and its results page
(n-gram k=5 slower than production: Chart.js draws both charts with production as the
reference and the Pareto front, the table reads without script). Nothing wider than the
window, nothing in the console. Screenshots: the test's tmp dir and /tmp/trial-shots/."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser import PASSWORD, expect, login, overflow
from tests.deploys.trial_results_support import NGRAM, finished_seed_trial
from tests.deploys.trial_support import TrialSide

pytestmark = [pytest.mark.browser]
WIDTHS = (1400, 900, 390)
SHARED = Path("/tmp/trial-shots")


def _shot(page: Any, where: Path, name: str) -> None:
    path = where / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    SHARED.mkdir(exist_ok=True)
    shutil.copy(path, SHARED / path.name)


def test_a_person_reads_a_finished_trial_on_its_pages_at_three_widths(
    live_server: Any, open_page: Callable[..., Any], trial_side: TrialSide, tmp_path: Path
) -> None:
    olga = trial_side.requester
    olga.set_password(PASSWORD)
    olga.save()
    trial = finished_seed_trial(trial_side)
    base = live_server.url
    logged: list[str] = []
    for width in WIDTHS:
        page = open_page(width=width, height=1000)
        page.on("console", lambda m: logged.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: logged.append(f"page error: {e}"))
        login(page, base, "olga")
        page.goto(f"{base}/deploys/trials/new/?host={trial_side.host.pk}")
        expect(page.locator("form.narrow")).to_contain_text(NGRAM)
        _shot(page, tmp_path, f"trial-01-form-{width}")
        assert overflow(page) is None, overflow(page)

        page.goto(f"{base}/deploys/requests/{trial.pk}/")
        expect(page.locator("#status-reason")).to_contain_text(
            "n-gram k=5: 14.7% slower than production at 1 stream; "
            "production restored at 73.8 tok/s"
        )
        expect(page.locator(".step-note").first).to_contain_text("budget 60 s")
        _shot(page, tmp_path, f"trial-02-job-{width}")
        assert overflow(page) is None, overflow(page)

        page.click("text=Results: every candidate beside production")
        expect(page.locator("figure.chart-box.chart-drawn")).to_have_count(2)
        legend = page.evaluate(
            "() => document.getElementById('cmp-ttft').chart.data.datasets.map(d => d.label)"
        )
        assert legend[0].endswith("(reference)") and legend[-1].startswith("Pareto front")
        expect(page.locator("ul.verdicts")).to_contain_text(
            "n-gram k=5: 14.7% slower than production at 1 stream"
        )
        expect(page.locator("table.compare")).to_contain_text("TPOT p50")
        _shot(page, tmp_path, f"trial-03-results-{width}")
        assert overflow(page) is None, overflow(page)
    assert logged == [], logged

    # Without script the tables say what the charts draw.
    plain = open_page(width=390, height=1000)
    plain.route("**/*.js", lambda route: route.abort())
    login(plain, base, "olga")
    plain.goto(f"{base}/benchmarks/trials/{trial.pk}/")
    expect(plain.locator("figure.chart-box.chart-drawn")).to_have_count(0)
    expect(plain.locator(".chart-canvas").first).to_be_hidden()
    expect(plain.locator("#cmp-ttft table")).to_contain_text("n-gram k=5")
    expect(plain.locator("table.compare")).to_contain_text("31% · 12% · 5% · 2% · 1%")
    _shot(plain, tmp_path, "trial-04-results-no-script-390")
    assert overflow(plain) is None, overflow(plain)
