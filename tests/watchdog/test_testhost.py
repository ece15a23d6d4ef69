"""The watchdog against a real test host (systemd + sshd, the GPU and vLLM doubles), over
real SSH: a deploy, then each provocation detected by the next check and closed when it
clears — a hand edit of the unit file (drift), an EngineCore outside the unit's cgroup
(the double's `leftover_worker`, set by a drop-in, itself drift: systemd's DropInPaths
over SSH), the service stopped with that EngineCore still holding GPU memory (shown on the
fleet page, each opening and closing in the notification outbox); then,
under live traffic and checked on a short period as the dispatcher does, the engine
frozen behind a healthy /health and the speculative acceptance falling (the double's
control file, tests/doubles/vllm_double_control.py), each found within its window and one
period, told by e-mail to a local SMTP server and by a webhook to a local receiver, and
closed when it clears. The host boots once for the module."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any, TypeVar

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone
from django.utils.html import escape

from deploys.jobs import benchmark as bench_hook
from deploys.jobs import queue as deploy_queue
from deploys.jobs import runner as deploy_runner
from notify import queue as notify_queue
from notify import tasks as notify_tasks
from notify.events import Event
from notify.models import Notification, Webhook
from perf.models import BenchRun
from tests.deploys.helpers import (
    approved_request,
    double_profile,
    gpu_pids,
    make_host,
    make_users,
    wait_for,
)
from tests.doubles.smtp_sink import SmtpSink
from tests.doubles.webhook_receiver import WebhookReceiver
from tests.testhost.host import TestHost, boot_hosts
from tests.testhost.pytest_plugin import unavailable_reason
from watchdog import claims, runner
from watchdog import queue as watch_queue
from watchdog.models import HostWatch, Incident

pytestmark = [pytest.mark.testhost, pytest.mark.django_db(transaction=True)]

UNIT_DIR = "/etc/systemd/system"
CONTROL = "/run/vllm-double/control.json"  # the double's control file (vllm_double_control)
TRAFFIC = "vllm-traffic"
PERIOD_S = 2  # the hosts' period here (30 s by default): seconds where operators have minutes
HUNG_S = 4.0
ACCEPTANCE_S = 4.0
T = TypeVar("T")


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
    requester, approver = make_users()
    get_user_model().objects.filter(pk=approver.pk).update(email="adam@example.org")
    request = approved_request(site, requester, approver, data=data, benchmark=False)
    unit, port = request.unit_name, int(data["port"])
    assert deploy_runner.run_deploy(request.pk) == "succeeded", request.status_reason
    admin = Client()
    admin.force_login(approver)

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
    # Shown: the fleet counts them, the host's incident list names each.
    fleet = admin.get("/watchdog/fleet-table/").content.decode()
    assert f'?host={site.pk}">3 open</a>' in fleet
    listed = admin.get(f"/watchdog/incidents/?host={site.pk}").content.decode()
    assert all(escape(i.summary) in listed for i in found.values()), listed

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
    # Told: each opening and closing is in the outbox for the approver (the delivery
    # itself, to a local SMTP server and webhook receiver, is the next test's).
    told = Notification.objects.filter(address="adam@example.org")
    for incident in closed:
        for event in (Event.INCIDENT_OPENED, Event.INCIDENT_CLOSED):
            assert told.filter(event=event, payload__incident=incident.pk).count() == 1
    gpuhost.systemctl("stop", f"{unit}.service")


@pytest.fixture
def told(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[SmtpSink, WebhookReceiver]]:
    """A local SMTP server behind Django's SMTP backend and a local webhook receiver; the
    delivery task runs as soon as notifications are committed, as a worker would run it."""
    with SmtpSink() as sink, WebhookReceiver() as receiver:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", sink.port
        settings.EMAIL_USE_TLS, settings.EMAIL_HOST_USER, settings.EMAIL_HOST_PASSWORD = (
            False,
            "",
            "",
        )
        settings.NOTIFY_TIMEOUT_S = 2
        monkeypatch.setattr(
            notify_queue, "async_task", lambda *a, **k: notify_tasks.deliver_notifications_task()
        )
        yield sink, receiver


class Checker:
    """The dispatcher and a worker in one loop: claim the due watches, check them; each
    check's duration kept (a finding can come no sooner than the check that reads it)."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def run_due(self) -> None:
        token, due = claims.claim_due()
        for watch_id in due:
            started = time.monotonic()
            assert runner.run_check(watch_id, token).startswith("checked")
            self.seconds.append(time.monotonic() - started)

    def until(self, found: Callable[[], T | None], timeout: float) -> T:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.run_due()
            value = found()
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"not found within {timeout} s of checks")

    @property
    def slack_s(self) -> float:
        """The slowest check so far, and the loop's own polling."""
        return max(self.seconds, default=0.0) + 0.5


def incident(host_id: int, key: str, *, is_open: bool = True) -> Incident | None:
    rows = Incident.objects.filter(host_id=host_id, key=key, closed_at__isnull=is_open)
    return rows.order_by("-pk").first()


def after(moment: datetime, then: datetime | None) -> float:
    assert then is not None
    return (then - moment).total_seconds()


def control(gpuhost: TestHost, **values: Any) -> datetime:
    """Set the double's control file; the moment it was written."""
    gpuhost.write_file(CONTROL, json.dumps(values))
    return timezone.now()


def metrics(gpuhost: TestHost, port: int) -> str:
    return gpuhost.nsenter(["curl", "-s", f"http://127.0.0.1:{port}/metrics"]).stdout


def test_a_frozen_engine_and_falling_acceptance_are_found_in_time_told_and_cleared(
    gpuhost: TestHost,
    captured: dict[str, list[tuple[Any, ...]]],
    told: tuple[SmtpSink, WebhookReceiver],
    settings: Any,
) -> None:
    sink, receiver = told
    settings.WATCHDOG_HUNG_WINDOW_S = HUNG_S
    settings.WATCHDOG_ACCEPTANCE_WINDOW_S = ACCEPTANCE_S
    settings.WATCHDOG_MIN_DRAFT_TOKENS = 200
    site = make_host(gpuhost)
    requester, approver = make_users()
    get_user_model().objects.filter(pk=approver.pk).update(email="adam@example.org")
    data = double_profile(
        spec_method="ngram",
        spec_num_tokens=3,
        spec_prompt_lookup_max=3,
        environment={"VLLM_DOUBLE_ACCEPTANCE_RATE": "0.6", "VLLM_DOUBLE_CONTROL_FILE": CONTROL},
    )
    request = approved_request(site, requester, approver, data=data, benchmark=False)
    unit, port = request.unit_name, int(data["port"])
    Webhook.objects.create(
        owner_id=approver.pk,
        url=receiver.url(),
        events=[Event.INCIDENT_OPENED, Event.INCIDENT_CLOSED],
        host=site,
    )
    # The figure a benchmark of this version on this host recorded (perf).
    BenchRun.objects.create(
        profile=request.profile_version.profile,
        profile_version=request.profile_version,
        host=site,
        engine="servebench",
        settings={},
        settings_key="k",
        result={},
        acceptance_rate=60.0,
    )
    gpuhost.nsenter(["rm", "-f", CONTROL])
    assert deploy_runner.run_deploy(request.pk) == "succeeded", request.status_reason
    [(_, watch_id, token)] = captured["watch"]
    assert runner.run_check(watch_id, token).startswith("checked")
    HostWatch.objects.filter(pk=watch_id).update(period_s=PERIOD_S, next_due=timezone.now())
    gpuhost.nsenter(
        [
            "systemd-run", "--unit", TRAFFIC, "--collect",
            "-E", "PYTHONPATH=/usr/local/lib/gpu-double",
            gpuhost.python, "-m", "doubles.vllm_double_traffic",
            "--port", str(port), "--model", "double", "--clients", "2",
        ],
        check=True,
    )  # fmt: skip
    checker = Checker()
    try:
        # Busy and healthy for longer than both windows: no incident.
        settle = time.monotonic() + max(HUNG_S, ACCEPTANCE_S) + PERIOD_S
        while time.monotonic() < settle:
            checker.run_due()
            time.sleep(0.05)
        assert list(open_incidents(site.pk)) == [], open_incidents(site.pk)
        now = HostWatch.objects.get(pk=watch_id).readings["now"]
        assert now["units"][0]["tok_s"] > 0

        # The engine stops making tokens; /health still answers 200 (vLLM #39863, #51663).
        frozen = control(gpuhost, freeze=True)
        hung = checker.until(lambda: incident(site.pk, f"hung_engine:{unit}"), 30)
        assert healthy(gpuhost, unit, port)
        # Counted from the first reading that showed the stopped counter, which lags its
        # due time by up to a check; the check that decides takes up to one more.
        bound = HUNG_S + PERIOD_S + checker.slack_s + max(checker.seconds)
        print(f"hung engine found {after(frozen, hung.opened_at):.2f} s after the freeze")
        assert after(frozen, hung.opened_at) <= bound
        assert hung.kind == "hung_engine" and hung.summary.startswith(f"{unit}: 2 requests")
        assert "no token generated for" in hung.summary
        assert hung.evidence["running"] == 2 and hung.evidence["window_s"] == HUNG_S
        thawed = control(gpuhost)
        hung_closed = checker.until(lambda: incident(site.pk, hung.key, is_open=False), 30)
        assert after(thawed, hung_closed.closed_at) <= PERIOD_S + checker.slack_s

        # Drafts stop being accepted: far below the benchmark's 60 %.
        fell = control(gpuhost, acceptance_rate=0.05)
        collapse = checker.until(lambda: incident(site.pk, f"acceptance_collapse:{unit}"), 30)
        assert after(fell, collapse.opened_at) <= ACCEPTANCE_S + PERIOD_S + checker.slack_s
        assert collapse.summary.endswith("against 60.0% when benchmarked")
        assert collapse.evidence["rate_percent"] < 30 and collapse.evidence["draft_tokens"] >= 200
        recovered = control(gpuhost)
        collapse_closed = checker.until(lambda: incident(site.pk, collapse.key, is_open=False), 30)
        assert (
            after(recovered, collapse_closed.closed_at) <= ACCEPTANCE_S + PERIOD_S + checker.slack_s
        )
        assert list(open_incidents(site.pk)) == []
    finally:
        gpuhost.systemctl("stop", f"{TRAFFIC}.service")
        gpuhost.nsenter(["rm", "-f", CONTROL])
        gpuhost.systemctl("stop", f"{unit}.service")

    # Told: each opening and closing by e-mail and by the host's webhook, with the host,
    # the kind and the evidence's summary (at the close: as the incident was last seen).
    mails = [m.message for m in sink.messages if "Incident" in str(m.message["Subject"])]
    posts = [p.body for p in receiver.posts]
    assert len(mails) == len(posts) == 4
    for verb, event, seen in (
        ("opened", Event.INCIDENT_OPENED, hung),
        ("closed", Event.INCIDENT_CLOSED, hung_closed),
        ("opened", Event.INCIDENT_OPENED, collapse),
        ("closed", Event.INCIDENT_CLOSED, collapse_closed),
    ):
        subject = f"[specadmin] Incident {verb} on {site.name}: {seen.kind}"
        [mail] = [m for m in mails if m["Subject"] == subject]
        assert mail["To"] == "adam@example.org"
        text = mail.get_payload(decode=True)
        assert isinstance(text, bytes)
        assert f"{seen.kind} on {site.name} {verb}: {seen.summary}" in text.decode()
        [post] = [p for p in posts if p["event"] == event and p["payload"]["incident"] == seen.pk]
        assert post["host"] == site.name and post["payload"]["kind"] == seen.kind
        assert post["payload"]["summary"] == seen.summary
        assert post["payload"]["evidence"] == seen.evidence
    assert (
        not Notification.objects.exclude(state=Notification.State.DELIVERED)
        .filter(event__in=[Event.INCIDENT_OPENED, Event.INCIDENT_CLOSED])
        .exists()
    )
