"""Host pages in Debian's headless Chromium: probe results appear in place, without a
reload, once the worker has recorded them (the polling pattern of templates/live/_poll.html).
Screenshots: artifacts/screenshots/hosts-*.png."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from deploys.models import Host
from deploys.services import hosts
from tests.browser import PASSWORD, expect, login, shot
from units.roles import ADMIN, ensure_roles

pytestmark = [pytest.mark.browser]
PINNED = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"


def test_probe_results_appear_in_place_when_the_worker_has_run_the_probe(
    live_server: Any, page: Any
) -> None:
    admin = get_user_model().objects.create_user("ada", password=PASSWORD)
    admin.groups.add(ensure_roles()[ADMIN])
    host = Host.objects.create(
        name="gpu-a",
        address="192.0.2.10",
        key_file="/etc/specadmin/id_ed25519",
        host_key=PINNED,
        host_key_fingerprint="SHA256:test",
    )
    login(page, live_server.url, "ada")
    page.goto(f"{live_server.url}/deploys/hosts/{host.pk}/")
    page.get_by_role("button", name="Probe host").click()
    results = page.locator("#probe-results")
    expect(results).to_contain_text("waiting for a worker")
    shot(page, "hosts-01-probe-queued")
    page.evaluate("window.notReloaded = true")

    # What deploys.jobs.runner.run_probe records once a worker has probed the host.
    hosts.host_record_probe(
        host=host,
        facts={
            "systemd_version": 257,
            "vllm_version": "0.16.0",
            "gpu_count": 1,
            "gpus": [{"index": 0, "name": "NVIDIA H200", "memory_free_mib": 143000}],
        },
        actor=admin,
    )
    expect(results).to_contain_text("NVIDIA H200")
    expect(results).not_to_contain_text("waiting for a worker")
    assert page.evaluate("window.notReloaded") is True
    assert results.get_attribute("hx-get") is None  # polling has stopped
    shot(page, "hosts-02-probe-results-in-place")
