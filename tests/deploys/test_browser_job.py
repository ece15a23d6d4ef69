"""A deploy job's page in Debian's headless Chromium, while a real job runs against the
test host: the steps, their states and durations and the readiness progress appear without
a reload; Cancel asks first on a page that says what it will do, then stops the job, puts
back what ran before and the page says what the host runs; a queued request shows its
place in line; a failed rollback puts a banner on every page; the host page offers restart,
rollback and removal. Screenshots: artifacts/screenshots/job-*.png (look at them).
"""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connections

from deploys.jobs import benchmark as bench_hook
from deploys.jobs import queue, runner
from deploys.models import DeployRequest
from deploys.services.deploy_requests import deploy_request_approve, deploy_request_create
from tests.browser import PASSWORD, expect, login, overflow, shot
from tests.deploys.helpers import approved_request, double_profile, make_host
from tests.testhost.host import TestHost
from units.roles import ADMIN, APPROVER, ensure_roles
from units.services import profile_update

pytestmark = [pytest.mark.browser, pytest.mark.testhost]


@pytest.fixture(autouse=True)
def no_queue_no_benchmark(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queue, "async_task", lambda *args, **kwargs: None)
    monkeypatch.setattr(bench_hook, "_implementation", None)


def step_item(page: Any, name: str) -> Any:
    """The step list's entry of one step (by its name, exactly: shown beside its title)."""
    title = page.locator("summary > code", has_text=re.compile(f"^{name}$"))
    return page.locator("#steps > li").filter(has=title)


def test_a_running_job_updates_in_place_and_cancel_says_what_the_host_runs(
    live_server: Any, open_page: Any, module_testhost: TestHost
) -> None:
    roles = ensure_roles()
    users = get_user_model().objects
    ada = users.create_user("ada", password=PASSWORD)
    ada.groups.add(roles[ADMIN])
    bob = users.create_user("bob", password=PASSWORD)
    bob.groups.add(roles[APPROVER])
    site = make_host(module_testhost, name="gpu-a")
    production = approved_request(
        site, ada, bob, data=double_profile(name="vllm-slow-load", deploy_journal_check_sec=1)
    )
    assert runner.run_deploy(production.pk) == "succeeded"
    data = {**production.profile_version.data, "deploy_ready_timeout_sec": 300}
    data["environment"] = {**data["environment"], "VLLM_DOUBLE_LOAD_S": "90"}
    slow = profile_update(profile=production.profile_version.profile, data=data, updated_by=None)
    request = deploy_request_approve(
        request=deploy_request_create(
            profile_version=slow, host=site, requested_by=ada, acknowledge_warnings=True
        ),
        approver=bob,
    )
    queued = approved_request(site, ada, bob, data=double_profile(name="vllm-next"))

    def run() -> None:
        try:
            runner.run_deploy(request.pk)
        finally:
            connections.close_all()

    job = threading.Thread(target=run)
    job.start()
    page = open_page()
    try:
        login(page, live_server.url, "ada")
        page.goto(f"{live_server.url}/deploys/requests/{request.pk}/")
        page.evaluate("window.notReloaded = true")
        readiness = step_item(page, "readiness")
        expect(readiness).to_contain_text("Running", timeout=90_000)
        expect(readiness.locator(".step-progress")).to_contain_text(
            "Loading model /models/double-model", timeout=30_000
        )
        expect(step_item(page, "gpu_clean")).to_contain_text("Succeeded")
        expect(step_item(page, "push")).to_contain_text(re.compile(r"\d s · \d+ command"))
        assert page.evaluate("window.notReloaded") is True, "updated without a reload"
        shot(page, "job-01-readiness-progress-live")

        narrow = open_page(390, 844)
        login(narrow, live_server.url, "ada")
        narrow.goto(f"{live_server.url}/deploys/requests/{queued.pk}/")
        expect(narrow.locator("#queue-position")).to_contain_text("number 1 in line")
        assert overflow(narrow) is None, overflow(narrow)
        shot(narrow, "job-02-queued-390px")

        page.get_by_role("link", name="Cancel the job…").click()
        # A page of its own says what the cancel does before anything is cancelled.
        expect(page.locator("#cancel-summary")).to_have_text(
            "stop vllm-slow-load v2, put vllm-slow-load v1's unit back, start vllm-slow-load "
            "v1 and wait for it"
        )
        expect(page.locator("#cancel-steps")).to_contain_text(
            "Start vllm-slow-load v1 again and wait until it is ready (up to 5 min)."
        )
        assert overflow(page) is None, overflow(page)
        shot(page, "job-03-cancel-confirmation")
        page.get_by_role("button", name="Cancel and put vllm-slow-load v1 back").click()
        expect(page.locator("#status")).to_have_text("Cancelled", timeout=60_000)
        expect(page.locator("#status-reason")).to_have_text(
            "cancelled by ada during readiness, previous unit restored and ready"
        )
        expect(page.locator("#host-state")).to_contain_text(
            "vllm-slow-load.service on gpu-a: active (running), answering /health; its file "
            "is the unit it had before this job"
        )
        assert page.locator("#job").get_attribute("hx-get") is None, "polling stopped"
        shot(page, "job-04-cancelled-host-state")
    finally:
        DeployRequest.objects.filter(pk=request.pk, cancel_requested_at__isnull=True).update(
            cancel_requested_at=request.requested_at
        )
        job.join(120)
        module_testhost.nsenter(["sh", "-c", "systemctl stop 'vllm-*' 2>/dev/null; true"])

    # A failed rollback: a banner on every page, until a later job for that unit succeeds.
    DeployRequest.objects.filter(pk=queued.pk).update(
        status="rollback_failed",
        status_reason="gpu_clean: GPU 5 is held by PID 4242 (python, user alice, 38 GiB); "
        "THE ROLLBACK FAILED too",
        finished_at=request.requested_at,
    )
    page.goto(f"{live_server.url}/profiles/")
    banner = page.locator("#rollback-banner")
    expect(banner).to_contain_text("A rollback failed: the host may be down.")
    expect(banner).to_contain_text(f"vllm-next.service on gpu-a (#{queued.pk})")
    shot(page, "job-05-failed-rollback-banner")

    page.goto(f"{live_server.url}/deploys/hosts/{site.pk}/")
    units = page.locator("section[aria-labelledby=deployed-units]")
    expect(units).to_contain_text("vllm-slow-load.service")
    expect(units.get_by_role("button", name="Restart")).to_be_visible()
    expect(units.get_by_role("button", name="Remove…")).to_be_visible()
    units.get_by_role("button", name="Restart").click()
    expect(page.locator(".page-head h1")).to_contain_text("Restart #")
    expect(page.locator("#status")).to_have_text("Waiting for approval")
    shot(page, "job-06-restart-requested-from-the-host-page")
