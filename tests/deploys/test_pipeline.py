"""The restart pipeline against a real test host (systemd + sshd) with the GPU and vLLM
doubles, over real SSH: request → approve → preflight (the host's own vLLM checks the
argv) → push → stop → GPU-clean → start → journal check → readiness → done; the failures
the issue names, rollback, cancel, and the restart / rollback / remove / withdraw requests.

The runner is called the way the worker's task wrapper calls it (test_qcluster_pipeline.py
runs the same through real workers). The module has a host of its own: its services hold
"GPU memory" on all 8 GPUs, which tests on the session's shared host must not see.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db import connections
from django.utils import timezone

from audit.models import AuditEvent
from audit.verify import verify_chain
from deploys import selectors
from deploys.jobs import benchmark as bench_hook
from deploys.jobs import queue, runner
from deploys.jobs.lease import lease_seconds, wait_seconds
from deploys.jobs.steps import StepResult
from deploys.models import DeployRequest, Host, JobStep, PushedUnit
from deploys.running import rollback_choices, unit_on_host
from deploys.services.deploy_requests import (
    RequestNotPending,
    deploy_request_approve,
    deploy_request_create,
)
from deploys.services.unit_requests import (
    deploy_job_cancel,
    deploy_request_withdraw,
    host_set_restarts_without_approval,
    remove_request_create,
    restart_request_create,
    rollback_request_create,
)
from hostops.channel.push import BACKUP_SUFFIX, sha256_hex
from tests.deploys.helpers import (
    UNIT_DIR,
    approved_request,
    double_profile,
    foreign_gpu_holder,
    gpu_pids,
    make_host,
    make_users,
    step_rows,
    wait_for,
)
from tests.testhost.host import TestHost
from units.services import profile_create, profile_update

pytestmark = pytest.mark.testhost

RESTART = ["stop", "gpu_clean", "start", "journal_check", "readiness"]
DEPLOY_STEPS = [
    "host_lock",
    "preflight",
    "vllm_check",
    "push",
    "daemon_reload",
    *RESTART,
    "benchmark",
]
ROLLBACK_STEPS = ["restore", *RESTART]
# vLLM 0.11 has no `suffix` method (0.14 added it): a profile linted for 0.16 passes
# specadmin's own checks, a host whose vLLM is 0.11 rejects it when the engine starts.
OLD_VLLM = {"VLLM_DOUBLE_VERSION": "0.11.0"}
SUFFIX = {"spec_method": "suffix", "spec_num_tokens": 4}


# --------------------------------------------------------------------------------------
# fixtures


@pytest.fixture
def pair(transactional_db: None) -> tuple[AbstractBaseUser, AbstractBaseUser]:
    return make_users()


@pytest.fixture(autouse=True)
def queued(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """What approving hands to django-q2 (captured instead of queued: the test runs it)."""
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(queue, "async_task", lambda *args, **kwargs: calls.append(args))
    return calls


@pytest.fixture(autouse=True)
def no_benchmark(monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark step has its own tests (tests/perf); here it is the empty hook."""
    monkeypatch.setattr(bench_hook, "_implementation", None)


@pytest.fixture
def gpuhost(module_testhost: TestHost) -> Iterator[TestHost]:
    """The module's host, left with no service running and no GPU holder after each test."""
    yield module_testhost
    module_testhost.nsenter(["sh", "-c", "systemctl stop 'vllm-*' 2>/dev/null; true"])
    for pid in gpu_pids(module_testhost):
        module_testhost.nsenter(["kill", "-KILL", str(pid)])
    module_testhost.nsenter(["pkill", "-KILL", "-u", "alice"])


@pytest.fixture
def site(gpuhost: TestHost, pair: Any) -> Host:
    return make_host(gpuhost)


def deploy(site: Host, pair: Any, data: dict[str, Any]) -> DeployRequest:
    """Request + approve + run; the request, refreshed."""
    request = approved_request(site, *pair, data=data)
    runner.run_deploy(request.pk)
    request.refresh_from_db()
    return request


def new_version(request: DeployRequest, pair: Any, **changes: Any) -> DeployRequest:
    """The next version of the request's profile, requested and approved."""
    profile = request.profile_version.profile
    data = {**request.profile_version.data, **changes}
    if "environment" in changes:
        data["environment"] = {
            **request.profile_version.data["environment"],
            **changes["environment"],
        }
    version = profile_update(profile=profile, data=data, updated_by=None, comment="next")
    created = deploy_request_create(
        profile_version=version,
        host=request.host,
        requested_by=pair[0],
        acknowledge_warnings=True,
    )
    return deploy_request_approve(request=created, approver=pair[1])


def run(request: DeployRequest) -> DeployRequest:
    runner.run_deploy(request.pk)
    request.refresh_from_db()
    return request


def steps(request: DeployRequest, phase: str = "main") -> list[tuple[str, str]]:
    return list(
        JobStep.objects.filter(request=request, phase=phase)
        .order_by("pk")
        .values_list("name", "status")
    )


def step(request: DeployRequest, name: str, phase: str = "main") -> JobStep:
    return JobStep.objects.get(request=request, name=name, phase=phase)


def unit_state(host: TestHost, request: DeployRequest) -> dict[str, str]:
    out = host.systemctl(
        "show", "-p", "ActiveState,SubState,MainPID,LoadState", f"{request.unit_name}.service"
    ).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []

    def target() -> None:
        try:
            out.append(fn())
        finally:
            connections.close_all()

    thread = threading.Thread(target=target)
    thread.start()
    return thread, out


def running_step(request: DeployRequest, name: str) -> bool:
    return JobStep.objects.filter(request=request, name=name, status="running").exists()


# --------------------------------------------------------------------------------------
# the happy path and a second version


def test_happy_path_request_approve_push_clean_stop_start_journal_ready_done(
    gpuhost: TestHost, site: Host, pair: Any
) -> None:
    first = deploy(site, pair, double_profile())
    assert first.status == "succeeded", (first.status_reason, step_rows(first))
    assert [n for n, _ in steps(first)] == DEPLOY_STEPS
    assert dict(steps(first))["benchmark"] == "skipped"
    assert first.last_step == "benchmark"
    assert first.host_state.endswith(
        "active (running), answering /health; its file is the requested unit"
    )
    check = step(first, "vllm_check")
    assert check.reads["vllm_check"]["ok"] is True
    assert check.reads["vllm_check"]["python"] == "/usr/bin/python3"
    assert unit_state(gpuhost, first)["ActiveState"] == "active"
    ready = step(first, "journal_check")
    assert "answers /health and lists 'double'" in ready.log

    # v2 replaces the running v1: stop, clean, start, ready; v1 kept as the backup.
    second = run(new_version(first, pair, environment={"V": "2"}))
    assert second.status == "succeeded", second.status_reason
    path = f"{UNIT_DIR}/{first.unit_name}.service"
    assert gpuhost.read_file(path) == second.unit_text
    assert gpuhost.read_file(path + BACKUP_SUFFIX) == first.unit_text
    stop = step(second, "stop")
    assert stop.reads["service"]["processes"], "the running v1's processes were read"
    clean = step(second, "gpu_clean")
    assert clean.result["kills"] == [] and "clean: GPUs 0-7" in clean.log
    assert len(clean.reads["gpus"]) == 8
    for row in JobStep.objects.filter(request=second).exclude(name__in=("host_lock", "benchmark")):
        assert row.commands["count"] > 0 or row.name in ("daemon_reload", "readiness"), row.name
        for command in row.commands["records"]:
            assert command["exit"] is not None or command.get("error"), command
            assert command["s"] >= 0
    kinds = list(
        AuditEvent.objects.filter(object_id=str(second.pk), object_type="deploys.deployrequest")
        .order_by("id")
        .values_list("kind", flat=True)
    )
    assert kinds[:3] == ["deploy.requested", "deploy.approved", "deploy.started"]
    assert kinds[-1] == "deploy.succeeded"
    assert verify_chain().ok


# --------------------------------------------------------------------------------------
# GPU-clean inside the pipeline


def test_escaped_engine_core_of_the_old_unit_is_killed_before_the_new_one_starts(
    gpuhost: TestHost, site: Host, pair: Any
) -> None:
    leaky = deploy(
        site, pair, double_profile(environment={"VLLM_DOUBLE_FAULTS": "leftover_worker"})
    )
    assert leaky.status == "succeeded", leaky.status_reason
    [engine] = gpu_pids(gpuhost)

    fixed = run(new_version(leaky, pair, environment={"VLLM_DOUBLE_FAULTS": ""}))

    assert fixed.status == "succeeded", fixed.status_reason
    clean = step(fixed, "gpu_clean")
    signals = [(k["signal"], k["pid"], k["name"]) for k in clean.result["kills"]]
    assert signals == [
        ("SIGTERM", engine, "VLLM::EngineCore"),
        ("SIGKILL", engine, "VLLM::EngineCore"),
    ]
    assert clean.result["kills"][0]["gpus"] == list(range(8))
    assert "clean: GPUs 0-7 at or below 1,000 MiB" in clean.log
    assert engine not in gpu_pids(gpuhost)
    events = AuditEvent.objects.filter(kind="gpu.process_signalled", object_id=str(fixed.pk))
    assert [(e.payload["signal"], e.payload["pid"]) for e in events.order_by("id")] == [
        ("SIGTERM", engine),
        ("SIGKILL", engine),
    ]


def test_another_users_gpu_process_stops_the_deploy_and_is_never_killed(
    gpuhost: TestHost, site: Host, pair: Any
) -> None:
    first = deploy(site, pair, double_profile())
    assert first.status == "succeeded"
    alice = foreign_gpu_holder(gpuhost, gpu=5, mib=38 * 1024)

    second = run(new_version(first, pair, environment={"V": "2"}))

    message = f"GPU 5 is held by PID {alice} (python3, user alice, 38 GiB)"
    assert message in step(second, "gpu_clean").result["reason"]
    assert alice in gpu_pids(gpuhost), "alice's process was not touched"
    assert step(second, "gpu_clean").result["kills"] == []
    # The rollback needs the same GPUs: it cannot start v1 either, and says so loudly.
    assert second.status == "rollback_failed", second.status_reason
    assert message in second.status_reason and "THE ROLLBACK FAILED" in second.status_reason
    assert [n for n, _ in steps(second, "rollback")] == ROLLBACK_STEPS
    assert dict(steps(second, "rollback"))["gpu_clean"] == "failed"
    assert gpuhost.read_file(f"{UNIT_DIR}/{first.unit_name}.service") == first.unit_text
    assert second in selectors.failed_rollbacks()
    assert AuditEvent.objects.filter(kind="deploy.rollback_failed", object_id=str(second.pk))


# --------------------------------------------------------------------------------------
# failures after the start


def test_a_speculative_config_the_hosts_vllm_rejects_fails_before_production_stops(
    gpuhost: TestHost, site: Host, pair: Any
) -> None:
    first = deploy(site, pair, double_profile(environment=OLD_VLLM))
    assert first.status == "succeeded", first.status_reason
    before = unit_state(gpuhost, first)

    bad = run(new_version(first, pair, **SUFFIX))

    assert bad.status == "failed", bad.status_reason
    assert bad.status_reason.startswith("vllm_check: vLLM 0.11.0 on ")
    assert "speculative config" in bad.status_reason and "suffix" in bad.status_reason
    assert [n for n, s in steps(bad) if s != "skipped"] == ["host_lock", "preflight", "vllm_check"]
    assert unit_state(gpuhost, first) == before, "production was not touched"
    assert gpuhost.read_file(f"{UNIT_DIR}/{first.unit_name}.service") == first.unit_text


def wrapped_vllm(host: TestHost) -> str:
    """A `vllm` that is a shell wrapper: no Python to ask, the check skips visibly."""
    path = "/opt/wrapped/bin/vllm"
    host.write_file(path, '#!/bin/sh\nexec /usr/local/bin/vllm "$@"\n', mode=0o755)
    return path


def test_a_bad_speculative_config_found_at_engine_start_is_rolled_back_within_seconds(
    gpuhost: TestHost, site: Host, pair: Any
) -> None:
    data = double_profile(environment=OLD_VLLM, vllm_executable=wrapped_vllm(gpuhost))
    first = deploy(site, pair, data)
    assert first.status == "succeeded", first.status_reason
    assert "cannot tell which Python runs vLLM" in step(first, "vllm_check").result["reason"]

    bad = run(new_version(first, pair, **SUFFIX))

    assert bad.status == "rolled_back", bad.status_reason
    check = step(bad, "journal_check")
    assert check.status == "failed"
    assert check.result["fatal"] == "speculative-config error", check.result
    assert any("Unsupported speculative method: 'suffix'" in line for line in check.result["lines"])
    assert [s for _, s in steps(bad, "rollback")] == ["succeeded"] * len(ROLLBACK_STEPS)
    assert gpuhost.read_file(f"{UNIT_DIR}/{first.unit_name}.service") == first.unit_text
    assert unit_state(gpuhost, first)["ActiveState"] == "active"
    assert "rolled back: the previous unit is running and ready again" in bad.status_reason
    assert bad.host_state.endswith("answering /health; its file is the unit it had before this job")
    assert PushedUnit.objects.filter(request=bad).count() == 2  # the push and the restore


def test_a_crash_late_in_the_load_is_reported_when_it_happens(
    gpuhost: TestHost, site: Host, pair: Any
) -> None:
    """'Minute 20' scaled down: the load takes 40 s, the engine dies at 8 s."""
    crashing = double_profile(
        environment={
            "VLLM_DOUBLE_LOAD_S": "40",
            "VLLM_DOUBLE_FAULTS": "crash_during_load",
            "VLLM_DOUBLE_CRASH_AFTER_S": "8",
        },
        deploy_journal_check_sec=2,
        deploy_rollback=False,
    )
    request = deploy(site, pair, crashing)

    assert request.status == "failed", request.status_reason
    ready = step(request, "readiness")
    # The crash itself ends the wait (its journal lines are the reason), not the end of the
    # load nor the readiness budget ("not ready after …").
    assert ready.status == "failed" and "CUDA out of memory" in ready.result["reason"]
    assert "not ready after" not in ready.result["reason"]
    assert "rollback is switched off for this profile" in request.status_reason


def test_cancel_during_the_readiness_wait_puts_production_back_and_it_answers(
    gpuhost: TestHost, site: Host, pair: Any
) -> None:
    """Production (v1) runs; v2 loads slowly; a cancel during v2's readiness wait stops
    v2, puts v1's unit back, starts it and waits until it answers — no second approval."""
    first = deploy(site, pair, double_profile(deploy_journal_check_sec=1))
    assert first.status == "succeeded", first.status_reason
    request = new_version(
        first,
        pair,
        environment={"VLLM_DOUBLE_LOAD_S": "120"},
        deploy_ready_timeout_sec=300,
    )
    thread, result = in_thread(lambda: runner.run_deploy(request.pk))
    assert wait_for(lambda: running_step(request, "readiness"), timeout=60)
    # While it waits, the job page's progress says how long and where the load is.
    progress = wait_for(lambda: step(request, "readiness").progress, timeout=10)
    assert "Loading model /models/double-model" in progress["message"], progress
    assert progress["elapsed_s"] >= 0
    deploy_job_cancel(request=request, user=pair[1])
    thread.join(120)
    # Seen by the wait itself: a cancel seen only at the next step boundary would come
    # after the 120 s load.
    assert result == ["cancelled"]
    request.refresh_from_db()
    assert request.status_reason == (
        f"cancelled by {pair[1]} during readiness, previous unit restored and ready"
    ), request.status_reason
    assert request.host_state.endswith(
        "active (running), answering /health; its file is the unit it had before this job"
    ), request.host_state
    on_host = gpuhost.nsenter(["cat", f"{UNIT_DIR}/{request.unit_name}.service"]).stdout
    assert on_host == first.unit_text
    assert unit_state(gpuhost, request)["ActiveState"] == "active"
    port = first.profile_version.data["port"]
    health = gpuhost.nsenter(["curl", "-sf", f"http://127.0.0.1:{port}/health"])
    assert health.returncode == 0, "production answers again"
    assert [n for n, s in steps(request) if s == "skipped"] == ["benchmark"]
    assert steps(request, "rollback") == [(n, "succeeded") for n in ROLLBACK_STEPS]
    kinds = AuditEvent.objects.filter(object_id=str(request.pk)).values_list("kind", flat=True)
    assert {"deploy.cancel_requested", "deploy.cancelled"} <= set(kinds)


# --------------------------------------------------------------------------------------
# restart, rollback to an earlier version, removal, withdrawal


def test_restart_request_restarts_the_deployed_unit_and_a_host_can_skip_its_approval(
    gpuhost: TestHost, site: Host, pair: Any, queued: list[tuple[Any, ...]]
) -> None:
    first = deploy(site, pair, double_profile())
    pid_before = unit_state(gpuhost, first)["MainPID"]
    restart = restart_request_create(host=site, unit_name=first.unit_name, requested_by=pair[0])
    assert (restart.kind, restart.status) == ("restart", "pending")
    assert restart.unit_sha256 == first.unit_sha256 == restart.host_unit_sha256
    restart = deploy_request_approve(request=restart, approver=pair[1])
    done = run(restart)
    assert done.status == "succeeded", done.status_reason
    assert [n for n, _ in steps(done)] == ["host_lock", "preflight", "vllm_check", *RESTART]
    assert unit_state(gpuhost, first)["MainPID"] != pid_before

    admin = pair[1]
    host_set_restarts_without_approval(host=site, value=True, actor=admin)
    auto = restart_request_create(host=site, unit_name=first.unit_name, requested_by=pair[0])
    assert auto.status == "approved" and auto.decided_by is None
    assert "need no approval" in auto.decision_comment
    assert run(auto).status == "succeeded"
    # A deploy still needs its approval.
    created = deploy_request_create(
        profile_version=first.profile_version,
        host=site,
        requested_by=pair[0],
        acknowledge_warnings=True,
    )
    assert created.status == "pending"


def test_rollback_request_puts_an_earlier_deployed_version_back(
    gpuhost: TestHost, site: Host, pair: Any
) -> None:
    first = deploy(site, pair, double_profile())
    second = run(new_version(first, pair, environment={"V": "2"}))
    assert second.status == "succeeded"
    [choice] = rollback_choices(host=site, unit_name=first.unit_name)
    target = choice.push
    assert target.sha256 == first.unit_sha256

    back = rollback_request_create(host=site, to=target, requested_by=pair[0])
    assert back.kind == "rollback" and back.unit_text == first.unit_text
    back = run(deploy_request_approve(request=back, approver=pair[1]))

    assert back.status == "succeeded", back.status_reason
    assert gpuhost.read_file(f"{UNIT_DIR}/{first.unit_name}.service") == first.unit_text
    # The host runs v1's text again, and everything says so (deploys.running).
    unit = unit_on_host(host=site, unit_name=first.unit_name)
    assert unit is not None and unit.text.versions == (first.profile_version,)
    assert unit.seen.step == "end" and unit.seen.request_id == back.pk
    assert dict(steps(back))["benchmark"] == "skipped"
    assert unit_state(gpuhost, first)["ActiveState"] == "active"


def test_remove_request_stops_cleans_disables_and_deletes_the_unit(
    gpuhost: TestHost, site: Host, pair: Any
) -> None:
    first = deploy(
        site, pair, double_profile(environment={"VLLM_DOUBLE_FAULTS": "leftover_worker"})
    )
    removal = remove_request_create(host=site, unit_name=first.unit_name, requested_by=pair[0])
    with pytest.raises(PermissionDenied):
        deploy_request_approve(request=removal, approver=pair[0])  # never one's own
    removal = run(deploy_request_approve(request=removal, approver=pair[1]))

    assert removal.status == "succeeded", removal.status_reason
    assert [n for n, _ in steps(removal)] == [
        "host_lock",
        "preflight",
        "stop",
        "gpu_clean",
        "remove",
    ]
    assert [k["signal"] for k in step(removal, "gpu_clean").result["kills"]] == [
        "SIGTERM",
        "SIGKILL",
    ]
    path = f"{UNIT_DIR}/{first.unit_name}.service"
    assert gpuhost.nsenter(["test", "-e", path]).returncode == 1
    assert unit_state(gpuhost, first)["LoadState"] == "not-found"
    assert gpu_pids(gpuhost) == set()
    removed = PushedUnit.objects.get(request=removal)
    assert removed.text == "" and removed.previous_sha256 == sha256_hex(first.unit_text.encode())
    assert AuditEvent.objects.filter(kind="unit.removed", object_id=str(removed.pk)).exists()
    assert selectors.deployed_unit(host=site, unit_name=first.unit_name) is None
    assert "not known to systemd; no unit file" in removal.host_state


def test_the_requester_withdraws_before_the_job_runs_but_not_after(site: Host, pair: Any) -> None:
    requester, approver = pair
    data = double_profile()
    version = profile_create(data=data, created_by=None).versions.get()
    pending = deploy_request_create(
        profile_version=version, host=site, requested_by=requester, acknowledge_warnings=True
    )
    with pytest.raises(PermissionDenied, match="Only the person who asked"):
        deploy_request_withdraw(request=pending, user=approver)
    assert deploy_request_withdraw(request=pending, user=requester).status == "withdrawn"
    assert runner.run_deploy(pending.pk) == "withdrawn", "a withdrawn request never runs"

    again = deploy_request_create(
        profile_version=version, host=site, requested_by=requester, acknowledge_warnings=True
    )
    again = deploy_request_approve(request=again, approver=approver)
    assert deploy_request_withdraw(request=again, user=requester).status == "withdrawn"
    kinds = AuditEvent.objects.filter(kind="deploy.withdrawn").count()
    assert kinds == 2

    third = deploy_request_create(
        profile_version=version, host=site, requested_by=requester, acknowledge_warnings=True
    )
    third = deploy_request_approve(request=third, approver=approver)
    DeployRequest.objects.filter(pk=third.pk).update(status="running")
    with pytest.raises(RequestNotPending, match="Cancel the job instead"):
        deploy_request_withdraw(request=third, user=requester)


def test_a_job_cancelled_while_queued_never_touches_the_host(
    gpuhost: TestHost, site: Host, pair: Any
) -> None:
    request = approved_request(site, *pair, data=double_profile())
    deploy_job_cancel(request=request, user=pair[0])
    request.refresh_from_db()
    assert request.status == "cancelled" and request.host_state == "unchanged: the job never ran"
    assert runner.run_deploy(request.pk) == "cancelled"
    assert not JobStep.objects.filter(request=request).exists()
    assert (
        gpuhost.nsenter(["test", "-e", f"{UNIT_DIR}/{request.unit_name}.service"]).returncode == 1
    )


def test_a_job_whose_worker_died_before_touching_the_host_runs_again_on_redelivery(
    gpuhost: TestHost, site: Host, pair: Any
) -> None:
    """The worker died while preflight ran (nothing changed on the host yet): the next
    delivery of the task takes the job over and runs it from the start."""
    request = approved_request(site, *pair, data=double_profile())
    long_ago = timezone.now() - timedelta(seconds=wait_seconds() + lease_seconds() + 60)
    DeployRequest.objects.filter(pk=request.pk).update(status="running", started_at=long_ago)
    JobStep.objects.create(request=request, name="host_lock", status="succeeded")
    JobStep.objects.create(request=request, name="preflight")  # running when it died

    assert runner.run_deploy(request.pk) == "succeeded"

    request.refresh_from_db()
    assert dict(steps(request))["preflight"] == "succeeded"
    assert JobStep.objects.get(request=request, name="preflight", status="failed").log == (
        "interrupted: the worker stopped"
    )
    resumed = AuditEvent.objects.filter(kind="deploy.started", object_id=str(request.pk))
    assert "resumed" in resumed.order_by("-id").first().payload


def test_a_regressed_benchmark_puts_the_previous_unit_back(
    gpuhost: TestHost, site: Host, pair: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The benchmark hook's contract (deploys/jobs/benchmark.py): "regressed" asks for a
    rollback, which the runner does when the profile allows it."""
    first = deploy(site, pair, double_profile())
    monkeypatch.setattr(
        bench_hook,
        "_implementation",
        lambda ctx: StepResult.regressed("14.8% slower than the baseline", output_tok_s=61.2),
    )
    second = run(new_version(first, pair, environment={"V": "2"}))
    assert second.status == "rolled_back", second.status_reason
    assert second.status_reason.startswith("benchmark: 14.8% slower than the baseline")
    assert step(second, "benchmark").result["output_tok_s"] == 61.2
    assert gpuhost.read_file(f"{UNIT_DIR}/{first.unit_name}.service") == first.unit_text
    assert unit_state(gpuhost, first)["ActiveState"] == "active"


def test_a_new_unit_that_fails_to_start_is_removed_again(
    gpuhost: TestHost, site: Host, pair: Any
) -> None:
    """Nothing to go back to: the rollback stops and removes the unit it had added."""
    data = double_profile(environment=OLD_VLLM, vllm_executable=wrapped_vllm(gpuhost), **SUFFIX)
    request = deploy(site, pair, data)
    assert request.status == "rolled_back", request.status_reason
    assert [(n, s) for n, s in steps(request, "rollback")][:2] == [
        ("restore", "succeeded"),
        ("stop", "skipped"),
    ]
    assert gpuhost.nsenter(["test", "-e", f"{UNIT_DIR}/{request.unit_name}.service"]).returncode
    assert "not known to systemd; no unit file" in request.host_state
    assert AuditEvent.objects.filter(kind="unit.removed").exists()
    # what the page says: no "previous unit" that could be back in place
    assert request.status_reason.endswith(
        "; rolled back: the new unit was removed again (the host had none before)"
    ), request.status_reason
