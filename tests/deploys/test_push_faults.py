"""Faults during a push, on the real test host over real SSH: a full disk under the unit
directory, and the connection cut right after (or right before) the unit's rename.

What must hold (docs/architecture.md, "The restart pipeline", push): a write that fails
replaces neither the unit nor its backup and the job says why; a push is recorded by what
the host's file really is afterwards, so the history matches the host.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser

from audit.models import AuditEvent
from deploys.jobs import queue, runner
from deploys.models import DeployRequest, Host, JobStep, PushedUnit
from deploys.services.deploy_requests import deploy_request_approve, deploy_request_create
from deploys.services.unit_requests import restart_request_create
from hostops.channel.push import BACKUP_SUFFIX, sha256_hex
from tests.deploys.helpers import (
    UNIT_DIR,
    approved_request,
    make_host,
    make_users,
    push_only,
    unique,
)
from tests.doubles.cut_transport import cutting_connect
from tests.testhost.host import TestHost
from units.services import profile_update

pytestmark = pytest.mark.testhost


@pytest.fixture
def pair(transactional_db: None) -> tuple[AbstractBaseUser, AbstractBaseUser]:
    return make_users()


@pytest.fixture(autouse=True)
def queued(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queue, "async_task", lambda *args, **kwargs: None)


@pytest.fixture
def site(testhost: TestHost, pair: Any) -> Host:
    return make_host(testhost)


def next_version(request: DeployRequest, pair: Any, text: str) -> DeployRequest:
    """The profile's next version (its description changed), requested and approved."""
    profile = request.profile_version.profile
    data = {**request.profile_version.data, "description": text}
    version = profile_update(profile=profile, data=data, updated_by=None, comment=text)
    created = deploy_request_create(
        profile_version=version, host=request.host, requested_by=pair[0], acknowledge_warnings=True
    )
    return deploy_request_approve(request=created, approver=pair[1])


def pushed(request: DeployRequest, **kwargs: Any) -> DeployRequest:
    runner.run_deploy(request.pk, steps=push_only(), **kwargs)
    request.refresh_from_db()
    return request


def listing(host: TestHost, unit: str) -> list[str]:
    """The unit's files in the unit directory (itself, its backup, temp files)."""
    out = host.nsenter(["ls", "-A", UNIT_DIR]).stdout.split()
    return sorted(name for name in out if unit in name)


@contextlib.contextmanager
def full_unit_dir(host: TestHost) -> Iterator[None]:
    """A small tmpfs over the unit directory, holding a copy of what is there, then filled
    up: every write into it hits ENOSPC. Unmounted afterwards (the old directory shows
    again, as it was)."""
    script = (
        'set -e; d=$(mktemp -d /run/specadmin-full.XXXX); mount -t tmpfs -o size=8m tmpfs "$d"; '
        'cp -a "$1"/. "$d"/; mount --bind "$d" "$1"; umount -l "$d"; rmdir "$d"; '
        'dd if=/dev/zero of="$1"/.specadmin-test-filler bs=64k 2>/dev/null || true'
    )
    host.nsenter(["sh", "-c", script, "sh", UNIT_DIR], check=True)
    try:
        free = host.nsenter(["stat", "-f", "-c", "%f", UNIT_DIR]).stdout.strip()
        assert free == "0", f"the tmpfs still has {free} free blocks"
        yield
    finally:
        host.nsenter(["umount", "-l", UNIT_DIR], check=True)


def test_disk_full_fails_the_push_and_leaves_the_unit_and_its_backup_as_they_were(
    testhost: TestHost, site: Host, pair: Any
) -> None:
    first = pushed(approved_request(site, *pair, name=unique("full")))
    second = pushed(next_version(first, pair, "second"))
    assert (first.status, second.status) == ("succeeded", "succeeded")
    path = f"{UNIT_DIR}/{first.unit_name}.service"
    third = next_version(second, pair, "third")

    with full_unit_dir(testhost):
        before = listing(testhost, first.unit_name)
        third = pushed(third)
        # The host, as the host sees it while its disk is full: nothing replaced.
        assert testhost.read_file(path) == second.unit_text
        assert testhost.read_file(path + BACKUP_SUFFIX) == first.unit_text
        assert listing(testhost, first.unit_name) == before, "no temp file left behind"

    assert third.status == "failed", third.status_reason
    assert "disk full" in third.status_reason and path in third.status_reason
    assert "was not replaced" in third.status_reason
    push = JobStep.objects.get(request=third, name="push")
    assert push.status == "failed" and "previous unit kept" not in push.log
    assert not PushedUnit.objects.filter(request=third).exists()
    assert not AuditEvent.objects.filter(kind="unit.pushed", payload__request=third.pk)
    assert "the unit it had before this job" in third.host_state


def test_every_sha256_the_push_logs_was_read_back_on_the_host(
    testhost: TestHost, site: Host, pair: Any
) -> None:
    first = pushed(approved_request(site, *pair, name=unique("sha")))
    second = pushed(next_version(first, pair, "second"))
    assert second.status == "succeeded", second.status_reason
    push = JobStep.objects.get(request=second, name="push")
    writes = [r for r in push.commands["records"] if r["kind"] == "write"]
    backup_sha = sha256_hex(first.unit_text.encode())
    assert [w["note"] for w in writes] == [
        f"read back on the host: {len(first.unit_text.encode())} bytes, sha256 {backup_sha}",
        f"read back on the host: {len(second.unit_text.encode())} bytes, "
        f"sha256 {second.unit_sha256}",
    ]
    assert f"kept as {UNIT_DIR}/{first.unit_name}.service{BACKUP_SUFFIX} (sha256 {backup_sha})" in (
        push.log
    )
    renames = [r["argv"][0] for r in push.commands["records"] if r["kind"] == "rename"]
    path = f"{UNIT_DIR}/{first.unit_name}.service"
    assert renames == [path + BACKUP_SUFFIX, path], "both staged first, the unit renamed last"


def test_a_connection_cut_right_after_the_rename_records_the_push_the_host_has(
    testhost: TestHost, site: Host, pair: Any
) -> None:
    first = pushed(approved_request(site, *pair, name=unique("cut")))
    second = pushed(next_version(first, pair, "second"), connect=cutting_connect(after=True))
    path = f"{UNIT_DIR}/{first.unit_name}.service"

    assert testhost.read_file(path) == second.unit_text  # the rename did happen
    assert second.status == "succeeded", second.status_reason
    push = JobStep.objects.get(request=second, name="push")
    assert "the connection failed after the rename" in push.log
    assert f"reconnected: {path} is the new unit (sha256 {second.unit_sha256}" in push.log
    record = PushedUnit.objects.get(request=second)
    assert record.sha256 == second.unit_sha256
    assert record.previous_sha256 == first.unit_sha256
    event = AuditEvent.objects.get(kind="unit.pushed", payload__request=second.pk)
    assert event.payload["sha256"] == second.unit_sha256 and event.payload["recovered"]
    # The history matches the host: a restart of the unit is not refused.
    restart = restart_request_create(host=site, unit_name=first.unit_name, requested_by=pair[0])
    assert restart.unit_sha256 == second.unit_sha256 == restart.host_unit_sha256


def test_a_connection_cut_before_the_rename_reached_the_host_records_no_push(
    testhost: TestHost, site: Host, pair: Any
) -> None:
    first = pushed(approved_request(site, *pair, name=unique("cut")))
    second = pushed(next_version(first, pair, "second"), connect=cutting_connect(after=False))
    path = f"{UNIT_DIR}/{first.unit_name}.service"

    assert testhost.read_file(path) == first.unit_text
    assert second.status == "failed", second.status_reason
    assert "push interrupted" in second.status_reason
    assert f"{path} is the previous unit" in second.status_reason
    push = JobStep.objects.get(request=second, name="push")
    assert push.result["host_file"] == "old"
    assert not PushedUnit.objects.filter(request=second).exists()
    assert "the unit it had before this job" in second.host_state
    # The staged unit was not renamed: its temp file went once the host was reached again.
    unit = f"{first.unit_name}.service"
    assert listing(testhost, first.unit_name) == [unit, unit + BACKUP_SUFFIX]
