"""The API tokens page in real headless Chromium: make a token, see it once, use it,
revoke it; at 1400 and 390 px wide (screenshots under artifacts/screenshots/)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from tests.browser import expect, login, overflow, shot
from units.roles import OPERATOR, ensure_roles

pytestmark = [pytest.mark.browser]


@pytest.mark.parametrize("width", [1400, 390])
def test_a_token_is_made_shown_once_and_revoked_on_its_page(
    live_server: object, open_page: object, width: int
) -> None:
    user = get_user_model().objects.create_user("olga", password="pw-olga-123")
    user.groups.add(ensure_roles()[OPERATOR])
    base = live_server.url  # type: ignore[attr-defined]
    page = open_page(width=width)  # type: ignore[operator]
    login(page, base, "olga", "pw-olga-123")
    page.get_by_role("link", name="API tokens").click()
    page.fill("#id_name", "ci-main")
    page.select_option("#id_scope", "request")
    page.get_by_role("button", name="Make token").click()
    secret = page.locator("#new-token").inner_text().strip()
    assert secret.startswith("sa_")
    expect(page.get_by_role("row", name="ci-main")).to_contain_text("active")
    shot(page, f"api-tokens-01-made-{width}")
    assert overflow(page) is None, overflow(page)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.get("/api/v1/me/").json()["token"] == "ci-main"
    page.reload()
    expect(page.locator("#new-token")).to_have_count(0)
    page.get_by_role("row", name="ci-main").get_by_role("button", name="Revoke").click()
    expect(page.get_by_role("row", name="ci-main")).to_contain_text("revoked")
    shot(page, f"api-tokens-02-revoked-{width}")
    assert client.get("/api/v1/me/").status_code == 401
