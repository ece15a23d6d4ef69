"""A host's check from reading to incidents: opened once, refreshed, closed when cleared,
left open when the reading fails; audited and signalled (watchdog.services)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from audit.models import AuditEvent
from audit.verify import verify_chain
from deploys.models import DeployRequest, Host, PushedUnit
from hostops.channel.push import sha256_hex
from tests.doubles.watch_host import FakeHost, FakeHostTransport, proc
from tests.units.factories import baseline
from tests.watchdog.helpers import PORT, UNIT, healthy_fake, make_host
from units.services import profile_create
from watchdog.models import HostWatch, Incident
from watchdog.services import check_host
from watchdog.signals import incident_closed, incident_opened

pytestmark = pytest.mark.django_db(transaction=True)


class Checker:
    def __init__(self, fake: FakeHost) -> None:
        self.host = make_host()
        self.fake = fake
        self.history: dict[str, Any] = {}
        self.clock = 1000.0

    def check(self, advance: float = 30.0) -> dict[str, Any]:
        self.clock += advance
        evaluation, _, _ = check_host(
            host=self.host,
            transport=FakeHostTransport(self.fake),
            history=self.history,
            clock=lambda: self.clock,
        )
        self.history = evaluation.history
        return evaluation.now


def approved_request_for(host: Host) -> DeployRequest:
    """The deploy request the host's push came from, as a job leaves it."""
    profile = profile_create(data=baseline(name=UNIT), created_by=None)
    push = PushedUnit.objects.get(host=host, unit_name=UNIT)
    request = DeployRequest.objects.create(
        profile_version=profile.versions.get(),
        host=host,
        unit_name=UNIT,
        unit_text=push.text,
        unit_sha256=push.sha256,
        status=DeployRequest.Status.SUCCEEDED,
        expires_at=timezone.now(),
        requested_by=get_user_model().objects.get_or_create(username="olga")[0],
    )
    PushedUnit.objects.filter(pk=push.pk).update(request=request)
    return request


def open_kinds(host: Any) -> list[tuple[str, str]]:
    return sorted(
        Incident.objects.filter(host=host, closed_at__isnull=True).values_list("kind", "key")
    )


@pytest.fixture
def signals() -> Any:
    got: list[tuple[str, int]] = []

    def opened(sender: Any, incident: Incident, **kw: Any) -> None:
        got.append(("opened", incident.pk))

    def closed(sender: Any, incident: Incident, **kw: Any) -> None:
        got.append(("closed", incident.pk))

    incident_opened.connect(opened)
    incident_closed.connect(closed)
    yield got
    incident_opened.disconnect(opened)
    incident_closed.disconnect(closed)


def test_a_healthy_host_opens_nothing_and_reports_what_runs() -> None:
    checker = Checker(healthy_fake())
    now = checker.check()
    assert open_kinds(checker.host) == []
    [unit] = now["units"]
    assert unit["state"]["active"] == "active" and unit["sha256"] == unit["approved_sha256"]
    assert unit["running"] == 1 and len(now["gpus"]) == 8 and now["errors"] == {}


def test_a_stopped_unit_opens_one_incident_and_its_start_closes_it(signals: Any) -> None:
    fake = healthy_fake()
    checker = Checker(fake)
    fake.units[UNIT].active, fake.units[UNIT].sub = "inactive", "dead"
    checker.check()
    checker.check()  # seen again: the same incident, not a second one
    [incident] = Incident.objects.filter(host=checker.host)
    assert (incident.kind, incident.key, incident.is_open) == (
        "unit_failed",
        "unit_failed:vllm-a",
        True,
    )
    fake.units[UNIT].active, fake.units[UNIT].sub = "active", "running"
    checker.check()
    incident.refresh_from_db()
    assert incident.closed_at is not None and incident.closed_reason.startswith("cleared")
    events = list(
        AuditEvent.objects.filter(object_type="watchdog.incident", object_id=str(incident.pk))
        .order_by("id")
        .values_list("kind", flat=True)
    )
    assert events == ["watchdog.incident_opened", "watchdog.incident_closed"]
    assert signals == [("opened", incident.pk), ("closed", incident.pk)]
    assert verify_chain().ok


def test_a_hand_edited_unit_file_is_drift_with_the_diff() -> None:
    fake = healthy_fake()
    checker = Checker(fake)
    fake.write_unit(UNIT, fake.files[f"/etc/systemd/system/{UNIT}.service"].decode() + "Nice=5\n")
    checker.check()
    [incident] = Incident.objects.filter(host=checker.host, kind="drift")
    assert "+Nice=5" in incident.evidence["diff"]


def test_a_drop_in_added_by_hand_is_drift_and_its_removal_closes_it() -> None:
    fake = healthy_fake()
    checker = Checker(fake)
    checker.check()
    assert open_kinds(checker.host) == []
    path = f"/etc/systemd/system/{UNIT}.service.d/override.conf"
    fake.files[path] = b"[Service]\nEnvironment=CUDA_VISIBLE_DEVICES=0\n"
    checker.check()
    [incident] = Incident.objects.filter(host=checker.host, kind="drift", closed_at__isnull=True)
    assert incident.key == f"drift:{UNIT}:drop-in {path}"
    assert incident.evidence["path"] == path
    assert "CUDA_VISIBLE_DEVICES=0" in incident.evidence["text"]
    del fake.files[path]
    checker.check()
    incident.refresh_from_db()
    assert incident.closed_at is not None
    assert incident.closed_reason.startswith("cleared")


def test_a_drop_in_the_approved_deploy_saw_and_an_admin_adopted_is_not_drift() -> None:
    fake = healthy_fake()
    checker = Checker(fake)
    path = f"/etc/systemd/system/{UNIT}.service.d/10-limits.conf"
    data = b"[Service]\nLimitNOFILE=65536\n"
    fake.files[path] = data
    request = approved_request_for(checker.host)
    request.host_loaded_unit = {
        "unit_name": UNIT,
        "load_state": "loaded",
        "files": [{"path": path, "kind": "drop-in", "sha256": sha256_hex(data)}],
    }
    request.save()
    checker.check()
    assert open_kinds(checker.host) == []
    fake.files[path] = data + b"LimitMEMLOCK=infinity\n"
    checker.check()
    assert open_kinds(checker.host) == [("drift", f"drift:{UNIT}:drop-in {path}")]


def test_a_leftover_engine_core_after_the_api_process_died_names_pid_user_gpus_memory() -> None:
    fake = healthy_fake()
    checker = Checker(fake)
    fake.units[UNIT].active, fake.units[UNIT].sub, fake.units[UNIT].result = (
        "failed",
        "failed",
        "signal",
    )
    fake.servers.clear()
    fake.hold_gpu(4242, 0, 128_000, proc(4242, cgroup="/init.scope"))
    checker.check()
    kinds = dict(open_kinds(checker.host))
    assert set(kinds) == {"unit_failed", "gpu_leftover"}
    leftover = Incident.objects.get(kind="gpu_leftover")
    assert leftover.summary.startswith(
        "PID 4242 (VLLM::EngineCore, user vllm) holds 125 GiB on GPU 0"
    )
    fake.free_gpus()
    checker.check()
    leftover.refresh_from_db()
    assert not leftover.is_open


def test_a_host_that_goes_down_is_unreachable_and_keeps_its_other_incidents_open() -> None:
    fake = healthy_fake()
    checker = Checker(fake)
    fake.units[UNIT].active = "inactive"
    checker.check()
    fake.down = True
    checker.check()
    assert open_kinds(checker.host) == [
        ("unit_failed", "unit_failed:vllm-a"),
        ("unreachable", "unreachable:ssh"),
    ], "a failed reading never closes what it could not judge"
    fake.down = False
    fake.units[UNIT].active = "active"
    checker.check()
    assert open_kinds(checker.host) == []


def test_a_failing_gpu_reading_is_unreachable_not_healthy() -> None:
    fake = healthy_fake()
    checker = Checker(fake)
    fake.hold_gpu(4242, 0, 128_000, proc(4242, cgroup="/init.scope"))
    fake.units[UNIT].active = "inactive"
    checker.check()
    fake.gpu_error = "nvidia-smi failed (exit 9): driver gone"
    checker.check()
    assert ("gpu_leftover", "gpu_leftover:vllm-a:pid 4242") in open_kinds(checker.host)
    assert ("unreachable", "unreachable:gpus") in open_kinds(checker.host)


def test_a_frozen_token_stream_with_requests_running_is_a_hung_engine() -> None:
    fake = healthy_fake()
    checker = Checker(fake)
    fake.servers[PORT].running = 3
    checker.check()
    checker.check()
    assert open_kinds(checker.host) == [], "30 s without a token is within the 60 s window"
    checker.check()
    assert ("hung_engine", "hung_engine:vllm-a") in open_kinds(checker.host)
    fake.servers[PORT].generated += 50
    checker.check()
    assert open_kinds(checker.host) == []


def test_a_metrics_endpoint_that_stops_answering_is_unreachable() -> None:
    fake = healthy_fake()
    checker = Checker(fake)
    fake.servers.clear()
    now = checker.check()
    assert open_kinds(checker.host) == [("unreachable", "unreachable:metrics:vllm-a")]
    assert "did not answer" in now["errors"]["metrics:vllm-a"]


def test_with_the_canary_on_a_server_that_gives_no_token_is_hung_and_recovery_closes_it() -> None:
    fake = healthy_fake()
    fake.servers[PORT].running = 0  # idle: /metrics alone cannot tell
    checker = Checker(fake)
    HostWatch.objects.create(host=checker.host, next_due=timezone.now(), canary=True)
    checker.check()
    assert open_kinds(checker.host) == []
    fake.servers[PORT].canary = "timeout"
    checker.check()
    [incident] = Incident.objects.filter(host=checker.host, closed_at__isnull=True)
    assert incident.key == f"hung_engine:{UNIT}:canary"
    assert incident.evidence["health"] == 200 and incident.evidence["status"] == 0
    fake.servers[PORT].canary = "ok"
    checker.check()
    incident.refresh_from_db()
    assert incident.closed_at is not None


def test_no_canary_request_while_it_is_off_and_turning_it_off_closes_its_incident() -> None:
    fake = healthy_fake()
    fake.servers[PORT].canary = "error"
    checker = Checker(fake)
    watch = HostWatch.objects.create(host=checker.host, next_due=timezone.now(), canary=True)
    checker.check()
    assert open_kinds(checker.host) == [("hung_engine", f"hung_engine:{UNIT}:canary")]
    asked = fake.servers[PORT].canaries
    HostWatch.objects.filter(pk=watch.pk).update(canary=False)
    checker.host = Host.objects.get(pk=checker.host.pk)
    checker.check()
    assert fake.servers[PORT].canaries == asked, "no canary request while it is off"
    assert open_kinds(checker.host) == []


def test_a_hosts_own_hung_window_replaces_the_default() -> None:
    fake = healthy_fake()
    checker = Checker(fake)
    HostWatch.objects.create(host=checker.host, next_due=timezone.now(), hung_window_s=300)
    for _ in range(4):  # 90 s with requests running and no token: hung at 60 s, not at 300
        checker.check()
    assert open_kinds(checker.host) == []
