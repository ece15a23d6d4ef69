"""The rollout pages in Debian's headless Chromium, at 1400 and 390 px: an operator
requests a rollout to a group, an approver sees the grouped texts and approves it once,
the rollout page shows the canary deploying and the hosts waiting, without overflowing.
Screenshots go to `artifacts/screenshots/fleet-*.png` (look at them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from fleet import coordinator
from fleet.models import Rollout
from fleet.services import host_group_save
from tests.browser import PASSWORD, expect, login, overflow, shot
from tests.fleet.conftest import make_hosts
from tests.units.factories import baseline
from units.roles import ADMIN, APPROVER, OPERATOR, ensure_roles
from units.services import profile_create

pytestmark = [pytest.mark.browser]


def _user(name: str, role: str) -> Any:
    user = get_user_model().objects.create_user(name, password=PASSWORD)
    user.groups.add(ensure_roles()[role])
    return user


def test_a_rollout_is_requested_approved_once_and_shown_live_on_a_phone(
    live_server: Any, open_page: Callable[..., Any], on_host: Any, queued: Any
) -> None:
    olga, _, ada = _user("olga", OPERATOR), _user("alice", APPROVER), _user("ada", ADMIN)
    hosts = make_hosts(3) + make_hosts(1, prefix="old", vllm="0.13.0")
    host_group_save(actor=ada, name="serving", hosts=hosts, description="behind the LB")
    profile = profile_create(data=baseline(), created_by=olga)

    page = open_page(1400)
    login(page, live_server.url, "olga")
    page.goto(f"{live_server.url}/rollouts/new/")
    page.select_option("#id_profile_version", str(profile.versions.get().pk))
    page.select_option("#id_group", label="serving")
    page.fill("#id_batch_size", "2")
    page.check("#id_acknowledge_warnings")
    page.click("button.primary")
    expect(page.locator("#texts")).to_contain_text("4 hosts get text A")
    expect(page.locator("#texts")).to_contain_text("old-1: linted for vLLM 0.13.0")
    shot(page, "fleet-requested-1400")
    rollout = Rollout.objects.get()

    approver = open_page(390, 900)
    login(approver, live_server.url, "alice")
    approver.goto(f"{live_server.url}/rollouts/{rollout.pk}/")
    assert overflow(approver) is None, overflow(approver)
    shot(approver, "fleet-approve-390")
    approver.click("button[value=approve]")
    expect(approver.locator("#rollout-status")).to_have_text("Running")
    coordinator.advance(rollout.pk)
    approver.reload()
    expect(approver.locator("#host-gpu-1")).to_contain_text("Deploying")
    expect(approver.locator("#host-gpu-2")).to_contain_text("Waiting for its batch")
    assert overflow(approver) is None, overflow(approver)
    shot(approver, "fleet-running-390")
    page.goto(f"{live_server.url}/deploys/hosts/{hosts[0].pk}/")
    expect(page.locator("#host-groups")).to_contain_text("serving")
