"""The watchdog against a real test host (systemd + sshd, the GPU and vLLM doubles), over
real SSH: a deploy, then each provocation detected by the next check and closed when it
clears — a hand edit of the unit file (drift), an EngineCore outside the unit's cgroup
(the double's `leftover_worker`, set by a drop-in, itself drift: systemd's DropInPaths
over SSH), the service stopped with that EngineCore still holding GPU memory. One lean
test: the host boots once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from deploys.jobs import benchmark as bench_hook
from deploys.jobs import queue as deploy_queue
from deploys.jobs import runner as deploy_runner
from tests.deploys.helpers import (
    approved_request,
    double_profile,
    gpu_pids,
    make_host,
    make_users,
    wait_for,
)
from tests.testhost.host import TestHost, boot_hosts
from tests.testhost.pytest_plugin import unavailable_reason
from watchdog import claims, runner
from watchdog import queue as watch_queue
from watchdog.models import HostWatch, Incident

pytestmark = [pytest.mark.testhost, pytest.mark.django_db(transaction=True)]

UNIT_DIR = "/etc/systemd/system"


@pytest.fixture(scope="module")
def gpuhost() -> Iterator[TestHost]:
    """A host of the module's own: its service holds "GPU memory", which the session's
    shared host must not see."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    [host] = boot_hosts(1, gpu_count=8)
    try:
        yield host
    finally:
        host.stop()


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[tuple[Any, ...]]]:
    """What approving and the job's end hand to django-q2 (the test runs them itself)."""
    calls: dict[str, list[tuple[Any, ...]]] = {"deploy": [], "watch": []}
    monkeypatch.setattr(deploy_queue, "async_task", lambda *a, **k: calls["deploy"].append(a))
    monkeypatch.setattr(watch_queue, "async_task", lambda *a, **k: calls["watch"].append(a))
    monkeypatch.setattr(bench_hook, "_implementation", None)
    return calls


def check(host_id: int) -> dict[str, Any]:
    """Claim the host's watch and run its check, as the dispatcher and a worker do."""
    token, watch_id = claims.claim_host(host_id)
    assert watch_id is not None, "the host could be claimed"
    assert runner.run_check(watch_id, token).startswith("checked")
    now: dict[str, Any] = HostWatch.objects.get(pk=watch_id).readings["now"]
    return now


def open_incidents(host_id: int) -> dict[str, Incident]:
    return {i.key: i for i in Incident.objects.filter(host_id=host_id, closed_at__isnull=True)}


def healthy(gpuhost: TestHost, unit: str, port: int) -> bool:
    status = gpuhost.nsenter(
        ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", f"http://127.0.0.1:{port}/health"]
    )
    active = gpuhost.systemctl("is-active", f"{unit}.service").stdout.strip()
    return status.stdout.strip() == "200" and active == "active"


def restart_unit(gpuhost: TestHost, unit: str, port: int) -> None:
    gpuhost.systemctl("daemon-reload", check=True)
    gpuhost.systemctl("restart", f"{unit}.service", check=True)
    assert wait_for(lambda: healthy(gpuhost, unit, port), timeout=60), gpuhost.journal(
        f"{unit}.service"
    )


def test_drift_a_leftover_engine_core_and_a_stopped_unit_are_found_and_cleared(
    gpuhost: TestHost, captured: dict[str, list[tuple[Any, ...]]]
) -> None:
    site = make_host(gpuhost)
    data = double_profile()
    request = approved_request(site, *make_users(), data=data, benchmark=False)
    unit, port = request.unit_name, int(data["port"])
    assert deploy_runner.run_deploy(request.pk) == "succeeded", request.status_reason

    # The job's end asked for a check of its host: claimed and queued at once.
    [(_, watch_id, token)] = captured["watch"]
    assert runner.run_check(watch_id, token).startswith("checked")
    assert open_incidents(site.pk) == {}
    now = HostWatch.objects.get(pk=watch_id).readings["now"]
    [seen] = now["units"]
    assert seen["state"]["active"] == "active" and seen["sha256"] == seen["approved_sha256"]
    assert seen["running"] == 0 and len(now["gpus"]) == 8

    # Someone edits the unit on the host.
    path = f"{UNIT_DIR}/{unit}.service"
    approved = gpuhost.read_file(path)
    gpuhost.write_file(path, approved + "# raised the limits by hand\n")
    check(site.pk)
    drift = open_incidents(site.pk)[f"drift:{unit}"]
    assert "+# raised the limits by hand" in drift.evidence["diff"]
    gpuhost.write_file(path, approved)
    check(site.pk)
    drift.refresh_from_db()
    assert not drift.is_open and list(open_incidents(site.pk)) == []

    # An EngineCore outside the unit's cgroup (vLLM #55510, GPUStack #2177): a drop-in
    # added by hand (drift itself) turns on the double's escape.
    dropin = f"{UNIT_DIR}/{unit}.service.d"
    gpuhost.nsenter(["mkdir", "-p", dropin], check=True)
    gpuhost.write_file(
        f"{dropin}/leak.conf", "[Service]\nEnvironment=VLLM_DOUBLE_FAULTS=leftover_worker\n"
    )
    restart_unit(gpuhost, unit, port)
    [engine] = gpu_pids(gpuhost)
    check(site.pk)
    leak = f"drift:{unit}:drop-in {dropin}/leak.conf"
    drop_in = open_incidents(site.pk)[leak]
    assert drop_in.evidence["path"] == f"{dropin}/leak.conf"
    assert "VLLM_DOUBLE_FAULTS=leftover_worker" in drop_in.evidence["text"]
    leftover = open_incidents(site.pk)[f"gpu_leftover:{unit}:pid {engine}"]
    assert leftover.summary.startswith(f"PID {engine} (VLLM::EngineCore, user root) holds")
    assert "escaped the unit" in leftover.summary and "while it is running" in leftover.summary

    # The service stopped: the escaped EngineCore stays and keeps its GPU memory.
    gpuhost.systemctl("stop", f"{unit}.service", check=True)
    assert gpu_pids(gpuhost) == {engine}
    check(site.pk)
    found = open_incidents(site.pk)
    assert set(found) == {f"unit_failed:{unit}", f"gpu_leftover:{unit}:pid {engine}", leak}
    assert found[f"gpu_leftover:{unit}:pid {engine}"].evidence["gpus"] == list(range(8))
    assert found[f"unit_failed:{unit}"].summary == f"{unit}.service is not running (inactive)"

    # Cleared: the leftover killed, the drop-in gone, the unit started again.
    gpuhost.nsenter(["kill", "-KILL", str(engine)], check=True)
    gpuhost.nsenter(["rm", "-r", dropin], check=True)
    assert wait_for(lambda: not gpu_pids(gpuhost), timeout=10)
    restart_unit(gpuhost, unit, port)
    check(site.pk)
    assert open_incidents(site.pk) == {}
    closed = Incident.objects.filter(host=site, closed_at__isnull=False)
    assert sorted(closed.values_list("kind", flat=True)) == [
        "drift",
        "drift",
        "gpu_leftover",
        "unit_failed",
    ]
    gpuhost.systemctl("stop", f"{unit}.service")
