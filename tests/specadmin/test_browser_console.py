"""What the browser's console shows on the tour's first pages: nothing. Chromium logs
every failed request there (a missing /favicon.ico, which every page asked for, was one)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from tests.browser import PASSWORD, login

pytestmark = [pytest.mark.browser]


def test_the_login_home_and_profile_pages_log_nothing_to_the_browser_console(
    live_server: Any, page: Any
) -> None:
    logged: list[str] = []
    page.on("console", lambda message: logged.append(f"{message.type}: {message.text}"))
    page.on("pageerror", lambda error: logged.append(f"page error: {error}"))
    get_user_model().objects.create_superuser("ada", password=PASSWORD)
    login(page, live_server.url, "ada")
    for path in ("/", "/profiles/", "/deploys/hosts/"):
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("networkidle")
    assert logged == []
