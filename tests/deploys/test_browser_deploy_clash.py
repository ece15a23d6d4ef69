"""The deploy page in Debian's headless Chromium: a unit that would listen on the port of
another unit specadmin deployed on the host shows that clash, the other unit named, among
the lint findings. Screenshot: artifacts/screenshots/deploy-clash-01-preview.png."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from deploys import existing_units, selectors
from deploys.existing_units import ExistingUnit
from deploys.models import Host, PushedUnit
from hostops.channel.push import sha256_hex
from tests.browser import PASSWORD, expect, login, overflow, shot
from tests.deploys.helpers import fake_host_key
from tests.units.factories import baseline, ngram
from units.rendering import render_unit
from units.roles import OPERATOR, ensure_roles
from units.services import profile_create

pytestmark = [pytest.mark.browser]


def test_the_deploy_preview_names_the_deployed_unit_on_the_same_port(
    live_server: Any, page: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    olga = get_user_model().objects.create_user("olga", password=PASSWORD)
    olga.groups.add(ensure_roles()[OPERATOR])
    key = fake_host_key()
    host = Host.objects.create(
        name="gpu-a",
        address="192.0.2.10",
        key_file="/etc/specadmin/id_ed25519",
        host_key=f"{key.key_type} {key.base64}",
        host_key_fingerprint=key.fingerprint_sha256,
    )
    running = render_unit(ngram())  # the n-gram variant, on vLLM's default port 8000
    PushedUnit.objects.create(
        host=host,
        unit_name="vllm-kimi-k25-int4-ngram",
        text=running,
        sha256=sha256_hex(running.encode()),
    )
    version = profile_create(data=baseline(), created_by=olga).versions.get()
    monkeypatch.setattr(selectors, "read_host_unit", lambda **kwargs: None)  # not there yet
    monkeypatch.setattr(
        existing_units, "read_existing_unit", lambda *, host, unit_name: ExistingUnit(unit_name)
    )

    login(page, live_server.url, "olga")
    page.goto(
        f"{live_server.url}/deploys/requests/new/?profile_version={version.pk}&host={host.pk}"
    )
    page.get_by_role("button", name="Show diff and lint findings").click()
    findings = page.locator("li.issue").filter(has_text="VL325")
    expect(findings).to_contain_text("VL325")
    expect(findings).to_contain_text("vllm-kimi-k25-int4-ngram.service")
    expect(page.locator("body")).not_to_contain_text("No lint findings")
    shot(page, "deploy-clash-01-preview")
    assert overflow(page) is None
