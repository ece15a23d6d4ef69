"""The notifications page in real Chromium at a phone's width: reached from the account
menu, a bad URL answered at its field, a webhook added; nothing wider than the window.
Screenshots: artifacts/screenshots/notify-*.png."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from deploys.models import Host
from notify.events import Event
from notify.services import enqueue
from tests.browser import PASSWORD, login, overflow, shot
from units.roles import APPROVER, ensure_roles

pytestmark = [pytest.mark.browser]


def test_the_notifications_page_fits_a_phone_and_shows_a_bad_url_at_its_field(
    live_server: Any, open_page: Any
) -> None:
    user = get_user_model().objects.create_user(
        "alice", email="alice@example.org", password=PASSWORD
    )
    user.groups.add(ensure_roles()[APPROVER])
    Host.objects.create(name="gpu-a1-with-a-rather-long-name", address="10.0.0.7")
    enqueue(
        event=Event.APPROVAL_WAITING,
        subject="Approval waiting: request #12, deploy of qwen3-coder-480b-a35b-fp8 v7 "
        "(vllm-qwen3-coder-480b-a35b-fp8) on gpu-a1-with-a-rather-long-name",
        text="olga asks",
        payload={},
        users=[user],
    )
    page = open_page(390, 844)
    login(page, live_server.url, "alice")
    page.click("text=Notifications")
    page.wait_for_url(f"{live_server.url}/notifications/")
    page.fill("#id_webhook-url", "ftp://hooks.example.org/specadmin")
    page.click("text=Add webhook")
    error = page.locator('[data-field="url"] .issue.error')
    assert "over http or https only" in error.inner_text()
    problems = [p for p in [overflow(page)] if p]
    shot(page, "notify-settings-390-bad-url")
    page.fill(
        "#id_webhook-url",
        "https://hooks.slack.example.org/services/T0000000/B0000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    )
    page.check("#id_webhook-slack")
    page.click("text=Add webhook")
    page.wait_for_selector("text=The webhook is added.")
    if problem := overflow(page):
        problems.append(problem)
    shot(page, "notify-settings-390")
    assert problems == []
