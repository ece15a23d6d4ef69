"""The deploy and probe jobs against the real test host, over real SSH.

Requests are made and approved through `deploys.services` (as the web UI does), then the
runner is called the way the worker's task wrapper calls it. The fixtures `pair` (a
requester and an approver, committed: the jobs use their own connections) and `queued`
(what approving hands to django-q2) are this module's own.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.db import connections
from django.test import override_settings
from django.utils import timezone
from django.utils.module_loading import import_string
from django_q.models import Schedule

from audit.models import AuditEvent
from audit.verify import verify_chain
from deploys.jobs import queue, runner, steps, tasks
from deploys.jobs.checks import check_q_cluster
from deploys.locks import HostLock
from deploys.models import DeployRequest, Host, JobStep, PushedUnit
from deploys.probe import MANAGED_MARKER
from hostops.channel.push import BACKUP_SUFFIX, sha256_hex
from tests.deploys.helpers import (
    UNIT_DIR,
    approved_request,
    make_host,
    make_users,
    push_only,
    sshd_serving,
    step_rows,
    unique,
    wait_for,
)
from tests.ports import refusing_port
from tests.testhost.host import TestHost

STEP_NAMES = ["host_lock", "preflight", "push", "daemon_reload"]
# These tests are about claiming, pushing and reloading: the first steps of a deploy. The
# restart that follows (stop, GPU-clean, start, …) is tested in test_pipeline.py.
PUSH_ONLY = push_only()


# --------------------------------------------------------------------------------------
# helpers (the shared ones are in helpers.py)


def unit_path(request: DeployRequest) -> str:
    return f"{UNIT_DIR}/{request.unit_name}.service"


def audit_kinds(request: DeployRequest) -> list[str]:
    events = AuditEvent.objects.filter(object_type="deploys.deployrequest", object_id=request.pk)
    return list(events.order_by("id").values_list("kind", flat=True))


def temp_files(host: TestHost, unit: str) -> dict[str, int]:
    """Temp files of interrupted writes of `unit` (not of its backup), name → size."""
    script = 'for f in "$1"/."$2".specadmin-*; do [ -f "$f" ] && stat -c "%s %n" "$f"; done'
    out = host.nsenter(["sh", "-c", script, "sh", UNIT_DIR, unit]).stdout
    files = {}
    for line in out.splitlines():
        size, name = line.split(" ", 1)
        if ".specadmin-prev" not in name:
            files[name] = int(size)
    return files


class ThrottledProxy:
    """A TCP forwarder in front of the test host's sshd that slows client→server bytes.

    Unit files are at most 256 KiB, which loopback SSH uploads in milliseconds: too fast
    to kill the session in the middle. Throttling the path (not the code under test)
    makes "in the middle of the upload" a window of seconds.
    """

    def __init__(self, target: tuple[str, int], rate: float | None = None) -> None:
        self.target = target
        self.rate = rate  # bytes per second client→server; None: unthrottled
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            self._sockets += [client, server]
            threading.Thread(target=self._pipe, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, False), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, throttled: bool) -> None:
        try:
            with contextlib.suppress(OSError):
                while data := src.recv(4096):
                    if throttled and self.rate:
                        time.sleep(len(data) / self.rate)
                    dst.sendall(data)
        finally:  # one side gone: the other sees the connection drop, as on a real network
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def upstream_ports(self) -> list[int]:
        """The local ports of the connections to sshd (what sshd sees as the client)."""
        ports = []
        for s in self._sockets[1::2]:  # (client, server) pairs
            with contextlib.suppress(OSError):
                ports.append(s.getsockname()[1])
        return ports

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        for s in self._sockets:
            s.close()


# --------------------------------------------------------------------------------------
# fixtures


@pytest.fixture
def pair(transactional_db: None) -> tuple[AbstractBaseUser, AbstractBaseUser]:
    return make_users()


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """What approving handed to django-q2 (captured instead of queued)."""
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(queue, "async_task", lambda *args, **kwargs: calls.append(args))
    return calls


@pytest.fixture
def site(testhost: TestHost, pair: Any, queued: list[tuple[Any, ...]]) -> Host:
    return make_host(testhost)


@pytest.fixture
def proxy(testhost: TestHost) -> Iterator[ThrottledProxy]:
    p = ThrottledProxy((testhost.host, testhost.port))
    yield p
    p.close()


# --------------------------------------------------------------------------------------
# the deploy job


@pytest.mark.testhost
def test_approved_request_is_pushed_reloaded_and_backed_up(
    testhost: TestHost, site: Host, pair: Any, queued: list[tuple[Any, ...]]
) -> None:
    name = unique("job")
    old = f"{MANAGED_MARKER} from profile {name}: older\n[Service]\nExecStart=/bin/true\n"
    testhost.write_file(f"{UNIT_DIR}/{name}.service", old)
    request = approved_request(site, *pair, name=name)
    assert queued == [("deploys.jobs.tasks.deploy_task", request.pk)]

    assert runner.run_deploy(request.pk, steps=PUSH_ONLY) == "succeeded"

    request.refresh_from_db()
    path = unit_path(request)
    assert testhost.read_file(path) == request.unit_text
    assert testhost.read_file(path + BACKUP_SUFFIX) == old
    show = testhost.systemctl(
        "show", "-p", "LoadState,FragmentPath,NeedDaemonReload,ActiveState", f"{name}.service"
    ).stdout.split()
    assert sorted(show) == sorted(
        ["LoadState=loaded", f"FragmentPath={path}", "NeedDaemonReload=no", "ActiveState=inactive"]
    ), "pushed, reloaded, and (these steps only) not started"
    assert request.status == "succeeded" and request.finished_at is not None
    assert step_rows(request) == [(n, "succeeded") for n in STEP_NAMES]
    pushed = PushedUnit.objects.get(request=request)
    assert (pushed.sha256, pushed.previous_text, pushed.backup_path) == (
        request.unit_sha256,
        old,
        path + BACKUP_SUFFIX,
    )
    push_step = JobStep.objects.get(request=request, name="push")
    ran = [(r["kind"], r["argv"][:2], r["exit"]) for r in push_step.commands["records"]]
    assert ("write", [path + BACKUP_SUFFIX, f"{len(old)} bytes"], 0) in ran
    assert ("write", [path, f"{len(request.unit_text.encode())} bytes"], 0) in ran
    assert ("run", ["systemctl", "--no-pager"], 0) in ran  # daemon-reload, show
    assert push_step.commands["count"] == len(ran) and all(
        r["s"] >= 0 and r["at"] > 0 for r in push_step.commands["records"]
    )
    preflight_step = JobStep.objects.get(request=request, name="preflight")
    # The file, then the same file as the fragment systemd loads for the name (preflight
    # asks systemd what it loads: deploys.existing_units).
    assert [r["argv"] for r in preflight_step.commands["records"] if r["kind"] == "read"] == [
        [path],
        [path],
    ]
    assert preflight_step.reads["loaded_from"] == [
        {"path": path, "kind": "unit file", "sha256": sha256_hex(old.encode())}
    ]
    reload_step = JobStep.objects.get(request=request, name="daemon_reload")
    assert "inside push_unit" in reload_step.log
    assert reload_step.result["properties"]["NeedDaemonReload"] == "no"
    assert audit_kinds(request) == [
        "deploy.requested",
        "deploy.approved",
        "deploy.started",
        *[k for _ in STEP_NAMES for k in ("job.step_started", "job.step_finished")],
        "deploy.succeeded",
    ]
    event = AuditEvent.objects.get(kind="unit.pushed", object_id=pushed.pk)
    assert event.payload["sha256"] == request.unit_sha256 == sha256_hex(request.unit_text.encode())
    assert (event.host_name, event.actor_id) == (site.name, None)
    assert HostLock.objects.get(host=site).owner == "", "the lock is released"
    assert verify_chain().ok
    # What runs there changed: the host's facts are read again, by a probe of their own.
    assert queued[-1] == ("deploys.jobs.tasks.probe_task", site.pk, None)
    site.refresh_from_db()
    assert site.probe_queued_at is not None


@pytest.mark.testhost
def test_second_delivery_of_the_same_task_does_nothing(
    testhost: TestHost, site: Host, pair: Any
) -> None:
    request = approved_request(site, *pair)
    assert runner.run_deploy(request.pk, steps=PUSH_ONLY) == "succeeded"
    counts = (JobStep.objects.count(), PushedUnit.objects.count(), AuditEvent.objects.count())
    lock = HostLock.objects.values().get(host=site)

    assert (
        runner.run_deploy(request.pk, steps=PUSH_ONLY) == "succeeded"
    )  # at-least-once: delivered again

    assert (JobStep.objects.count(), PushedUnit.objects.count(), AuditEvent.objects.count()) == (
        counts
    )
    assert HostLock.objects.values().get(host=site) == lock, "not even the lock was touched"


@pytest.mark.testhost
def test_concurrent_deliveries_push_once(testhost: TestHost, site: Host, pair: Any) -> None:
    request = approved_request(site, *pair)
    start = threading.Barrier(4)
    results: list[str] = []

    def deliver() -> None:
        try:
            start.wait()
            results.append(runner.run_deploy(request.pk, steps=PUSH_ONLY))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=deliver) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)

    assert len(results) == 4 and results.count("succeeded") >= 1
    assert PushedUnit.objects.filter(request=request).count() == 1
    assert step_rows(request) == [(n, "succeeded") for n in STEP_NAMES]
    assert audit_kinds(request).count("deploy.started") == 1
    assert verify_chain().ok


@pytest.mark.testhost
def test_connection_killed_mid_upload_leaves_unit_unchanged_and_fails_clearly(
    testhost: TestHost, proxy: ThrottledProxy, pair: Any, queued: list[tuple[Any, ...]]
) -> None:
    site = make_host(testhost, port=proxy.port)
    name = unique("kill")
    path = f"{UNIT_DIR}/{name}.service"
    old = f"{MANAGED_MARKER} from profile {name}: older\n[Service]\nExecStart=/bin/true\n"
    testhost.write_file(path, old)
    # ~180 KiB of environment: a real, lint-clean unit just under push_unit's 256 KiB.
    environment = {f"PAD_{i:04d}": "p" * 100 for i in range(1500)}
    request = approved_request(site, *pair, name=name, environment=environment)
    assert len(request.unit_text.encode()) > 150 * 1024
    proxy.rate = 48 * 1024  # the upload now takes ~4 s
    killed: list[int] = []

    def kill_when_half_uploaded() -> None:
        def partial() -> bool:
            return any(
                size >= 32 * 1024 for size in temp_files(testhost, f"{name}.service").values()
            )

        if wait_for(partial, timeout=60, step=0.05):
            ours = sshd_serving(testhost, proxy.upstream_ports())
            testhost.nsenter(["kill", "-KILL", *map(str, ours)], check=True)
            killed.extend(ours)

    killer = threading.Thread(target=kill_when_half_uploaded)
    killer.start()
    status = runner.run_deploy(request.pk, steps=PUSH_ONLY)
    killer.join(60)

    assert killed, "the upload was never seen in progress"
    assert status == "failed"
    assert testhost.read_file(path) == old, "the host's unit is exactly as it was"
    request.refresh_from_db()
    assert request.status_reason.startswith("push: ConnectionLost: "), request.status_reason
    assert step_rows(request) == [
        ("host_lock", "succeeded"),
        ("preflight", "succeeded"),
        ("push", "failed"),
        ("daemon_reload", "skipped"),
    ]
    assert "ConnectionLost" in JobStep.objects.get(request=request, name="push").log
    failed = AuditEvent.objects.get(kind="job.step_failed", object_id=request.pk)
    assert failed.payload["step"] == "push"
    assert failed.payload["reason"].startswith("ConnectionLost: ")
    assert audit_kinds(request)[-1] == "deploy.failed"
    assert not PushedUnit.objects.exists()
    assert not AuditEvent.objects.filter(kind="unit.pushed").exists()
    assert HostLock.objects.get(host=site).owner == ""
    leftovers = temp_files(testhost, f"{name}.service")
    assert leftovers, "the dead connection could not remove its temp file"

    # The next job, under the lock, removes it and pushes (same live unit as before).
    proxy.rate = None
    retry = approved_request(site, *pair, name=unique("retry"), unit_name=name)
    assert runner.run_deploy(retry.pk, steps=PUSH_ONLY) == "succeeded"
    push_log = JobStep.objects.get(request=retry, name="push").log
    assert all(f in push_log for f in leftovers), push_log
    assert temp_files(testhost, f"{name}.service") == {}
    assert verify_chain().ok


@pytest.mark.testhost
def test_unit_edited_on_host_after_the_request_voids_without_writing(
    testhost: TestHost, site: Host, pair: Any
) -> None:
    request = approved_request(site, *pair)
    path = unit_path(request)
    testhost.write_file(path, "[Service]\nExecStart=/bin/sleep 1\n")

    assert runner.run_deploy(request.pk, steps=PUSH_ONLY) == "void"

    request.refresh_from_db()
    assert "changed since the request was made" in request.status_reason
    assert testhost.read_file(path) == "[Service]\nExecStart=/bin/sleep 1\n"
    assert step_rows(request) == [
        ("host_lock", "succeeded"),
        ("preflight", "failed"),
        ("push", "skipped"),
        ("daemon_reload", "skipped"),
    ]
    assert audit_kinds(request)[-2:] == ["job.step_failed", "deploy.voided"]


@pytest.mark.testhost
def test_approval_expired_while_queued_voids(testhost: TestHost, site: Host, pair: Any) -> None:
    request = approved_request(site, *pair)
    DeployRequest.objects.filter(pk=request.pk).update(expires_at=timezone.now())

    assert runner.run_deploy(request.pk, steps=PUSH_ONLY) == "void"

    request.refresh_from_db()
    assert request.status_reason.startswith("preflight: approval no longer valid: ")
    assert "expired" in request.status_reason
    assert testhost.nsenter(["test", "-e", unit_path(request)]).returncode == 1


@pytest.mark.testhost
def test_lint_errors_for_the_hosts_versions_void(
    testhost: TestHost, site: Host, pair: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stored text is linted again (not re-rendered): an error there refuses."""
    request = approved_request(site, *pair)
    bad = request.unit_text.replace("ExecStart=", "ExecStart=relative/", 1)
    digest = sha256_hex(bad.encode())
    DeployRequest.objects.filter(pk=request.pk).update(
        unit_text=bad, unit_sha256=digest, approved_sha256=digest
    )
    # Isolate the lint gate: the approval rules would (rightly) object to this text too.
    monkeypatch.setattr(steps, "approval_problems", lambda **kwargs: [])

    assert runner.run_deploy(request.pk, steps=PUSH_ONLY) == "void"

    request.refresh_from_db()
    assert "the approved unit has lint errors for systemd" in request.status_reason
    assert testhost.nsenter(["test", "-e", unit_path(request)]).returncode == 1


@pytest.mark.testhost
def test_unreachable_host_fails_with_a_clear_reason(
    testhost: TestHost, site: Host, pair: Any
) -> None:
    request = approved_request(site, *pair)
    with refusing_port() as closed_port:
        Host.objects.filter(pk=site.pk).update(ssh_port=closed_port)
        assert runner.run_deploy(request.pk, steps=PUSH_ONLY) == "failed"

    request.refresh_from_db()
    assert request.status_reason.startswith(f"preflight: cannot reach host {site.name}: ")
    assert "HostUnreachable" in request.status_reason


@pytest.mark.django_db(transaction=True)
def test_request_not_approved_is_left_alone() -> None:
    assert runner.run_deploy(987654) == "missing"
    assert not AuditEvent.objects.exists()


# --------------------------------------------------------------------------------------
# the probe job


@pytest.mark.testhost
def test_probe_records_the_hosts_facts(testhost: TestHost, site: Host, pair: Any) -> None:
    facts = runner.run_probe(site.pk, pair[1].pk)

    site.refresh_from_db()
    assert facts["systemd_version"] == site.systemd_version >= 252
    assert site.gpu_count == 8
    event = AuditEvent.objects.get(kind="host.probed")
    assert event.actor_id == pair[1].pk


@pytest.mark.testhost
def test_probe_of_unreachable_host_records_the_error(site: Host, pair: Any) -> None:
    with refusing_port() as closed_port:
        Host.objects.filter(pk=site.pk).update(ssh_port=closed_port)
        result = runner.run_probe(site.pk, None)

    assert result["error"].startswith("HostUnreachable: ")
    site.refresh_from_db()
    assert site.probe_error == result["error"]
    assert AuditEvent.objects.get(kind="host.probe_failed").payload["error"] == result["error"]


# --------------------------------------------------------------------------------------
# django-q2 wiring


def test_queue_names_the_thin_wrappers(queued: list[tuple[Any, ...]]) -> None:
    """The services call these from `transaction.on_commit` (tested with each service)."""
    queue.enqueue_deploy(7)
    queue.enqueue_probe(3, 5)
    assert queued == [
        ("deploys.jobs.tasks.deploy_task", 7),
        ("deploys.jobs.tasks.probe_task", 3, 5),
    ]
    for dotted, *_ in queued:
        assert callable(import_string(dotted))


@pytest.mark.django_db
def test_every_schedule_names_a_task_wrapper_that_exists() -> None:
    funcs = list(Schedule.objects.values_list("func", flat=True))
    assert sorted(funcs) == [
        "audit.tasks.checkpoint_task",
        "deploys.jobs.tasks.expire_stale_requests_task",
        "deploys.jobs.tasks.fail_abandoned_deploys_task",
        "fleet.tasks.check_rollouts_task",  # fleet migration 0002
        "notify.tasks.deliver_notifications_task",
        "watchdog.tasks.dispatch_task",
    ]
    for dotted in funcs:
        assert callable(import_string(dotted))


def test_wrappers_only_call_the_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "run_deploy", lambda request_id: f"ran {request_id}")
    monkeypatch.setattr(runner, "run_probe", lambda host_id, actor_id: {"h": host_id})
    assert tasks.deploy_task(4) == "ran 4"
    assert tasks.probe_task(2, None) == {"h": 2}


def test_project_q_cluster_settings_pass_the_check() -> None:
    assert check_q_cluster() == []


@pytest.mark.parametrize(
    ("conf", "error_id"),
    [
        ({"timeout": 3600, "retry": 3600}, "deploys.E002"),
        ({"timeout": 3600, "retry": 60}, "deploys.E002"),
        ({"retry": 60}, "deploys.E001"),
        ({"timeout": 300, "retry": 400}, "deploys.W001"),
        # the default profile's job with its rollback (~6,800 s) does not fit in an hour
        ({"timeout": 3600, "retry": 3700}, "deploys.W002"),
    ],
)
def test_q_cluster_check_refuses_retry_not_above_timeout(conf: dict, error_id: str) -> None:
    with override_settings(Q_CLUSTER=conf):
        assert [m.id for m in check_q_cluster()] == [error_id]


@pytest.mark.testhost
def test_a_job_that_could_outlive_the_worker_timeout_is_refused_before_the_host(
    testhost: TestHost, site: Host, pair: Any
) -> None:
    """The default waits (a 45 min load, twice with the rollback) against a 1 h Q_TIMEOUT:
    django-q2 would kill the worker half-way through; the job refuses to start."""
    request = approved_request(site, *pair, name=unique("budget"))
    with override_settings(Q_CLUSTER={"timeout": 3600, "retry": 3700}):
        assert runner.run_deploy(request.pk) == "failed"
    request.refresh_from_db()
    assert request.status_reason.startswith("this job may take up to 6,810 s")
    assert "Q_TIMEOUT=3600" in request.status_reason
    assert "nothing was done on the host" in request.status_reason
    assert {s for _, s in step_rows(request)} == {"skipped"}
