"""Two services on different GPUs of one host (profile A on GPUs 0-1, B on GPU 2), deployed
and redeployed in turn on a real test host with the GPU and vLLM doubles: neither one's
start waits for the other (the unit's own wait asks `nvidia-smi -i` for its GPUs alone),
and GPU-clean of one never touches the other's processes (it checks the GPUs that
CUDA_VISIBLE_DEVICES selects, read the way CUDA reads it: `linting.cuda`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser

from audit.models import AuditEvent
from deploys.jobs import benchmark as bench_hook
from deploys.jobs import queue, runner
from deploys.models import DeployRequest, Host, JobStep
from deploys.services.deploy_requests import deploy_request_approve, deploy_request_create
from tests.deploys.helpers import approved_request, double_profile, make_host, make_users
from tests.testhost.host import TestHost
from units.services import profile_update

pytestmark = pytest.mark.testhost

# A short wait inside a short start timeout: a wait held back by the other service fails
# the start in seconds, not minutes.
WAIT = {"gpu_free_wait": True, "gpu_free_wait_sec": 8, "timeout_start_sec": 60}


@pytest.fixture(autouse=True)
def quiet_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Approving hands nothing to django-q2 (the test runs the job); no benchmark hook."""
    monkeypatch.setattr(queue, "async_task", lambda *args, **kwargs: None)
    monkeypatch.setattr(bench_hook, "_implementation", None)


@pytest.fixture
def pair(transactional_db: None) -> tuple[AbstractBaseUser, AbstractBaseUser]:
    return make_users()


@pytest.fixture
def site(module_testhost: TestHost, pair: Any) -> Iterator[Host]:
    yield make_host(module_testhost)
    module_testhost.nsenter(["sh", "-c", "systemctl stop 'vllm-*' 2>/dev/null; true"])


def run(request: DeployRequest) -> DeployRequest:
    runner.run_deploy(request.pk)
    request.refresh_from_db()
    assert request.status == "succeeded", (request.status_reason, log(request, "start"))
    return request


def redeploy(request: DeployRequest, pair: Any, **changes: Any) -> DeployRequest:
    """The profile's next version, requested, approved and run."""
    data = {**request.profile_version.data, **changes}
    version = profile_update(
        profile=request.profile_version.profile, data=data, updated_by=None, comment="next"
    )
    created = deploy_request_create(
        profile_version=version, host=request.host, requested_by=pair[0], acknowledge_warnings=True
    )
    return run(deploy_request_approve(request=created, approver=pair[1]))


def log(request: DeployRequest, name: str) -> str:
    step = JobStep.objects.filter(request=request, name=name).first()
    return step.log if step else ""


def pids_on(host: TestHost, gpus: str) -> set[int]:
    out = host.nsenter(
        ["nvidia-smi", "-i", gpus, "--query-compute-apps=pid", "--format=csv,noheader"]
    )
    return {int(p) for p in out.stdout.split()}


def signalled(request: DeployRequest) -> set[int]:
    events = AuditEvent.objects.filter(kind="gpu.process_signalled", object_id=str(request.pk))
    return {e.payload["pid"] for e in events}


def test_services_on_other_gpus_neither_wait_for_nor_lose_processes_to_each_other(
    module_testhost: TestHost, site: Host, pair: Any
) -> None:
    host = module_testhost
    # A's EngineCore escapes the unit on its stop: GPU-clean has something to kill.
    leaky = {"VLLM_DOUBLE_LOAD_S": "1", "VLLM_DOUBLE_FAULTS": "leftover_worker"}
    a_data = double_profile(gpu_devices="0,1", tensor_parallel_size=2, environment=leaky, **WAIT)
    a = run(approved_request(site, *pair, data=a_data))
    a_engine = pids_on(host, "0,1")
    assert a_engine and pids_on(host, "2") == set()

    b_data = double_profile(gpu_devices="2", tensor_parallel_size=1, **WAIT)
    b = run(approved_request(site, *pair, data=b_data))
    b_engine = pids_on(host, "2")
    assert b_engine and pids_on(host, "0,1") == a_engine  # B's start did not wait for A

    fixed = {**a.profile_version.data["environment"], "VLLM_DOUBLE_FAULTS": ""}
    a2 = redeploy(a, pair, environment=fixed)
    clean = log(a2, "gpu_clean")
    assert "GPUs to check: CUDA_VISIBLE_DEVICES='0,1' selects GPUs 0,1" in clean
    assert signalled(a2) and signalled(a2) <= a_engine  # A's leftover, killed
    assert all(f"left alone: PID {pid} " in clean for pid in b_engine)
    assert pids_on(host, "2") == b_engine  # B runs on, untouched
    a2_engine = pids_on(host, "0,1")
    assert a2_engine and not a2_engine & a_engine

    b2 = redeploy(b, pair, description="vLLM double on GPU 2, second version")
    assert "GPUs to check: CUDA_VISIBLE_DEVICES='2' selects GPU 2" in log(b2, "gpu_clean")
    assert signalled(b2) == set()
    assert pids_on(host, "0,1") == a2_engine  # A runs on, untouched; B started beside it
    assert pids_on(host, "2") and not pids_on(host, "2") & b_engine
