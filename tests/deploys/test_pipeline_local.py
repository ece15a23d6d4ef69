"""The same pipeline with the local transport (pystemd over D-Bus, NVML) inside the test
host, as a worker running on the GPU host itself would: the project's .venv runs there
(the host is an overlay of this machine's root), against a SQLite database of its own,
with the NVML double reading the same GPU state as the nvidia-smi double.

A first deploy runs a vLLM double whose EngineCore escapes its unit; the second deploy's
GPU-clean finds it through NVML, kills it, and starts the new unit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.testhost.host import TestHost

pytestmark = pytest.mark.testhost

REPO = Path(__file__).resolve().parents[2]
VENV_PYTHON = str(REPO / ".venv/bin/python")

IN_HOST = r"""
import json, os, sys
sys.path.insert(0, REPO)
os.environ.update(
    DJANGO_SETTINGS_MODULE="specadmin.settings",
    DATABASE_URL="sqlite:////root/local-pipeline.sqlite3",
    SECRET_KEY="in-host-test-only",
    REDIS_URL="",
)
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0, interactive=False)
from deploys.jobs import benchmark, runner
from deploys.models import DeployRequest, Host, JobStep
from deploys.services.deploy_requests import deploy_request_approve, deploy_request_create
from hostops.channel.local import LocalTransport
from tests.deploys.helpers import approved_request, double_profile, make_users
from tests.doubles.nvml_double import NvmlDouble
from units.services import profile_update

benchmark.register(None)
requester, approver = make_users()
host = Host.objects.create(name="this-host", address="localhost", transport="local")
connect = lambda h: LocalTransport(nvml=NvmlDouble())

first = approved_request(
    host, requester, approver,
    data=double_profile(environment={"VLLM_DOUBLE_FAULTS": "leftover_worker"}),
)
out = {"first": runner.run_deploy(first.pk, connect=connect)}
data = {**first.profile_version.data}
data["environment"] = {**data["environment"], "VLLM_DOUBLE_FAULTS": ""}
version = profile_update(profile=first.profile_version.profile, data=data, updated_by=None)
second = deploy_request_create(
    profile_version=version, host=host, requested_by=requester, acknowledge_warnings=True
)
second = deploy_request_approve(request=second, approver=approver)
out["second"] = runner.run_deploy(second.pk, connect=connect)
second.refresh_from_db()
out["reason"] = second.status_reason
out["host_state"] = second.host_state
out["steps"] = list(JobStep.objects.filter(request=second).values_list("name", "status"))
clean = JobStep.objects.get(request=second, name="gpu_clean")
out["kills"] = [(k["signal"], k["name"]) for k in clean.result["kills"]]
out["clean_log"] = clean.log
kinds = set()
for step in JobStep.objects.filter(request=second):
    kinds |= {r["kind"] for r in step.commands.get("records", [])}
out["record_kinds"] = sorted(kinds)
os.system("systemctl stop 'vllm-*' >/dev/null 2>&1")
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def in_host(module_testhost: TestHost) -> dict[str, Any]:
    script = f"REPO = {str(REPO)!r}\n" + IN_HOST
    res = module_testhost.ssh(
        ["env", "PYTHONDONTWRITEBYTECODE=1", VENV_PYTHON, "-c", script], timeout=400
    )
    assert res.returncode == 0, res.stderr[-4000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_the_pipeline_runs_inside_the_host_with_pystemd_and_nvml(in_host: dict[str, Any]) -> None:
    assert in_host["first"] == "succeeded"
    assert in_host["second"] == "succeeded", in_host["reason"]
    assert [s for _, s in in_host["steps"]] == ["succeeded"] * 10 + ["skipped"]
    assert in_host["kills"] == [["SIGTERM", "VLLM::EngineCore"], ["SIGKILL", "VLLM::EngineCore"]]
    assert "clean: GPUs 0-7" in in_host["clean_log"]
    # GPUs read through NVML, unit state through D-Bus: the local transport's own paths.
    assert {"nvml", "dbus", "run", "read", "write"} <= set(in_host["record_kinds"])
    assert "answering /health" in in_host["host_state"]
