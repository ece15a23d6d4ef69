"""The import page in real headless Chromium: paste the seed's hand-written unit, see the
original and the rendered unit side by side, the argv/environment check and the
findings; at 1400 and 390 px wide (screenshots under artifacts/screenshots/)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from tests.browser import expect, login, overflow, shot
from units.roles import OPERATOR, ensure_roles

pytestmark = [pytest.mark.browser]

SEED = Path(__file__).resolve().parents[2] / "examples" / "vllm-kimi-k25-int4-ngram.service"


@pytest.mark.parametrize("width", [1400, 390])
def test_pasting_the_seeds_unit_shows_both_texts_the_check_and_the_findings(
    live_server: object, open_page: object, width: int
) -> None:
    user = get_user_model().objects.create_user("olga", password="pw-olga-123")
    user.groups.add(ensure_roles()[OPERATOR])
    base = live_server.url  # type: ignore[attr-defined]
    page = open_page(width=width)  # type: ignore[operator]
    login(page, base, "olga", "pw-olga-123")
    page.goto(f"{base}/profiles/")
    page.get_by_role("link", name="Import a unit").click()
    page.fill("#id_text", SEED.read_text(encoding="utf-8"))
    page.fill("#id_filename", SEED.name)
    shot(page, f"import-01-form-{width}")
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("heading", name="Same commands?")).to_be_visible()
    expect(page.locator("#sameness")).to_contain_text("same argv as in the original")
    expect(page.locator("#sameness")).to_contain_text("same environment")
    expect(page.get_by_role("heading", name="Original")).to_be_visible()
    expect(page.get_by_role("heading", name="Rendered (v1)")).to_be_visible()
    expect(page.locator("#findings")).to_contain_text("OP402")
    shot(page, f"import-02-result-{width}")
    assert overflow(page) is None, overflow(page)
