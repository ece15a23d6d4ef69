"""Every main page fits the window at phone, laptop and desktop widths (390, 1024, 1400 px):
no page may be wider than its viewport (a wide table or unit scrolls inside its own box,
the navigation wraps). Real Chromium; screenshots: artifacts/screenshots/width-*.png."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from deploys.models import DeployRequest, Host
from tests.browser import login, overflow, shot
from units.management.commands.loaddemo import (
    BASELINE_NAME,
    DEMO_PASSWORD,
    DEMO_USERNAME,
    NGRAM_NAME,
)
from units.models import ServiceProfile
from units.roles import VIEWER, ensure_roles

pytestmark = [pytest.mark.browser]
WIDTHS = {390: 844, 1024: 768, 1400: 900}
PINNED = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
# Screenshots of every page at the phone width, and of the widest pages at the others.
SHOT_AT_EVERY_WIDTH = {"profile-edit", "profile-new", "request", "history", "profiles"}


def _site() -> dict[str, Any]:
    """The demo data plus a host and a deploy request with a long unit line."""
    call_command("loaddemo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    base = ServiceProfile.objects.get(name=BASELINE_NAME)
    ngram = ServiceProfile.objects.get(name=NGRAM_NAME)
    host = Host.objects.create(
        name="gpu-a1",
        address="127.0.0.1",
        ssh_port=1,
        key_file="/etc/specadmin/id_ed25519",
        host_key=PINNED,
        host_key_fingerprint="SHA256:" + "x" * 43,
    )
    version = ngram.versions.order_by("-number").first()
    admin = base.versions.first().created_by
    deploy = DeployRequest.objects.create(
        profile_version=version,
        host=host,
        unit_name=ngram.name,
        unit_text=version.unit_text,
        unit_sha256=hashlib.sha256(version.unit_text.encode()).hexdigest(),
        requested_by=admin,
        expires_at=timezone.now() + timedelta(hours=24),
    )
    return {"base": base, "ngram": ngram, "host": host, "deploy": deploy}


def _pages(site: dict[str, Any]) -> dict[str, str]:
    base, ngram, host, deploy = site["base"], site["ngram"], site["host"], site["deploy"]
    first, last = ngram.versions.order_by("number")[0], ngram.versions.order_by("-number")[0]
    return {
        "home": "/",
        "profiles": "/profiles/",
        "profile": f"/profiles/{ngram.pk}/",
        "profile-edit": f"/profiles/{ngram.pk}/edit/",
        "profile-new": "/profiles/new/",
        "profile-clone": f"/profiles/{base.pk}/clone/",
        "profile-history": f"/profiles/{ngram.pk}/versions/",
        "profile-version": f"/profiles/{ngram.pk}/versions/{last.number}/",
        "profile-compare": f"/profiles/compare/?a={first.pk}&b={last.pk}",
        "hosts": "/deploys/hosts/",
        "host": f"/deploys/hosts/{host.pk}/",
        "host-add": "/deploys/hosts/new/",
        "host-edit": f"/deploys/hosts/{host.pk}/edit/",
        "requests": "/deploys/requests/",
        "request-new": "/deploys/requests/new/",
        "request": f"/deploys/requests/{deploy.pk}/",
        "history": "/history/",
        "benchmarks": "/benchmarks/",
        "notifications": "/notifications/",
    }


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_no_page_is_wider_than_the_window(live_server: Any, open_page: Any, width: int) -> None:
    site = _site()
    viewer = ensure_roles()[VIEWER].user_set.model.objects.create_user("vic", password="x-vic-9")
    viewer.groups.add(ensure_roles()[VIEWER])
    page = open_page(width, WIDTHS[width])
    page.goto(f"{live_server.url}/accounts/login/")
    problems = [problem] if (problem := overflow(page)) else []
    if width == 390:
        shot(page, f"width-{width}-login")
    login(page, live_server.url, DEMO_USERNAME, DEMO_PASSWORD)
    for name, path in _pages(site).items():
        response = page.goto(f"{live_server.url}{path}")
        assert response is not None and response.status == 200, (name, path)
        page.wait_for_load_state("networkidle")
        if problem := overflow(page):
            problems.append(f"{name}: {problem}")
        if width == 390 or name in SHOT_AT_EVERY_WIDTH:
            shot(page, f"width-{width}-{name}")
    # The page a user without the role sees.
    other = open_page(width, WIDTHS[width])
    login(other, live_server.url, "vic", "x-vic-9")
    response = other.goto(f"{live_server.url}/profiles/new/")
    assert response is not None and response.status == 403
    if problem := overflow(other):
        problems.append(f"403: {problem}")
    if width == 390:
        shot(other, f"width-{width}-403")
    assert problems == []
