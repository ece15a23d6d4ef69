"""The restart pipeline's failure paths through real `qcluster` workers, on both setups
(SQLite + ORM broker, PostgreSQL + Redis), against the test host with its doubles:

1. v1 runs a vLLM double whose EngineCore escapes its unit;
2. v2 (no fault): GPU-clean finds the escaped EngineCore, SIGTERM then SIGKILL, all 8 GPUs
   clean, v2 starts and is ready;
3. v3 has a speculative config only the engine rejects (the host's vLLM is 0.11, behind a
   wrapper script, so the vLLM check skips): detected within 10 s of the start, rolled
   back, v2 running and ready again;
4. v4 loads for minutes: cancelled during the readiness wait, v2 is put back and answers.
The same scenarios, called in-process, are in test_pipeline.py.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable

import pytest

from tests.deploys.qcluster_support import Setup, manage, python
from tests.testhost.host import TestHost

pytestmark = [pytest.mark.qcluster, pytest.mark.testhost]

SETUP = """
import json, sys, django
django.setup()
from tests.deploys.helpers import approved_request, double_profile, make_host, make_users
from tests.testhost.host import TestHost

testhost = TestHost.from_json(json.loads(sys.argv[1]))
testhost.write_file("/opt/wrapped/bin/vllm", '#!/bin/sh\\nexec /usr/local/bin/vllm "$@"\\n', 0o755)
requester, approver = make_users()
host = make_host(testhost)
data = double_profile(
    environment={"VLLM_DOUBLE_FAULTS": "leftover_worker", "VLLM_DOUBLE_VERSION": "0.11.0"},
    vllm_executable="/opt/wrapped/bin/vllm",
)
# enqueued on commit
request = approved_request(host, requester, approver, data=data, benchmark=False)
print(json.dumps({"request": request.pk, "users": [requester.pk, approver.pk]}))
"""

# Next version of the profile of request argv[1], with argv[4] (JSON) changed; approved.
NEXT = """
import json, sys, django
django.setup()
from django.contrib.auth import get_user_model
from deploys.models import DeployRequest
from deploys.services.deploy_requests import deploy_request_approve, deploy_request_create
from units.services import profile_update
users = get_user_model().objects
old = DeployRequest.objects.get(pk=int(sys.argv[1]))
changes = json.loads(sys.argv[4])
profile = old.profile_version.profile
latest = profile.versions.order_by("-number").first().data
data = {**latest, **changes}
data["environment"] = {**latest["environment"], **changes.get("environment", {})}
version = profile_update(profile=profile, data=data, updated_by=None)
new = deploy_request_create(
    profile_version=version, host=old.host, requested_by=users.get(pk=int(sys.argv[2])),
    acknowledge_warnings=True,
)
new = deploy_request_approve(request=new, approver=users.get(pk=int(sys.argv[3])))
print(json.dumps({"request": new.pk}))
"""

STATE = """
import json, sys, django
django.setup()
from deploys.models import DeployRequest, JobStep
r = DeployRequest.objects.get(pk=int(sys.argv[1]))
steps = list(JobStep.objects.filter(request=r).order_by("pk"))
print(json.dumps({
    "status": r.status,
    "reason": r.status_reason,
    "host_state": r.host_state,
    "steps": [[s.phase, s.name, s.status, s.result.get("reason", "")] for s in steps],
    "kills": [
        [k["signal"], k["name"]] for s in steps if s.name == "gpu_clean"
        for k in s.result.get("kills", [])
    ],
}))
"""

CANCEL = """
import json, sys, django
django.setup()
from django.contrib.auth import get_user_model
from deploys.models import DeployRequest
from deploys.services.unit_requests import deploy_job_cancel
r = DeployRequest.objects.get(pk=int(sys.argv[1]))
deploy_job_cancel(request=r, user=get_user_model().objects.get(pk=int(sys.argv[2])))
print(json.dumps("asked"))
"""


def finished(env: dict[str, str], pk: int, timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        state = python(env, STATE, str(pk))
        if state["status"] not in ("approved", "running"):
            return state
        assert time.monotonic() < deadline, f"request #{pk} still {state['status']}"
        time.sleep(2)


# One setup for this scenario (tests/deploys/qcluster_support.py says which runs where).
@pytest.mark.parametrize("qsetup", ["postgres_redis"], indirect=True)
def test_leftover_kill_engine_start_failure_rollback_and_cancel_through_workers(
    qsetup: Setup,
    jobhost: TestHost,
    start_clusters: Callable[[Setup, int], list[subprocess.Popen]],
) -> None:
    env = qsetup.env
    [cluster] = start_clusters(qsetup, 1)
    made = python(env, SETUP, json.dumps(jobhost.to_json()))
    users = [str(u) for u in made["users"]]
    v1 = finished(env, made["request"])
    assert v1["status"] == "succeeded", v1["reason"]

    def next_version(previous: int, **changes: object) -> int:
        return python(env, NEXT, str(previous), *users, json.dumps(changes))["request"]

    v2_pk = next_version(made["request"], environment={"VLLM_DOUBLE_FAULTS": ""})
    v2 = finished(env, v2_pk)
    assert v2["status"] == "succeeded", v2["reason"]
    assert v2["kills"] == [["SIGTERM", "VLLM::EngineCore"], ["SIGKILL", "VLLM::EngineCore"]]

    v3_pk = next_version(v2_pk, spec_method="suffix", spec_num_tokens=4)
    v3 = finished(env, v3_pk)
    assert v3["status"] == "rolled_back", v3
    journal = next(s for s in v3["steps"] if s[:2] == ["main", "journal_check"])
    assert "Unsupported speculative method: 'suffix'" in journal[3]
    assert "previous unit is running and ready again" in v3["reason"]
    assert [s[2] for s in v3["steps"] if s[0] == "rollback"] == ["succeeded"] * 6

    v4_pk = next_version(
        v3_pk,
        spec_method="",
        spec_num_tokens=None,
        environment={"VLLM_DOUBLE_LOAD_S": "300"},
        deploy_journal_check_sec=1,
        deploy_ready_timeout_sec=120,  # the job with its rollback must fit Q_TIMEOUT
    )
    deadline = time.monotonic() + 120
    while True:
        state = python(env, STATE, str(v4_pk))
        if any(s[1:3] == ["readiness", "running"] for s in state["steps"]):
            break
        assert state["status"] in ("approved", "running"), state
        assert time.monotonic() < deadline, "the readiness wait never began"
        time.sleep(1)
    python(env, CANCEL, str(v4_pk), users[1])
    v4 = finished(env, v4_pk, timeout=120)
    assert v4["status"] == "cancelled", v4["reason"]
    assert v4["reason"].endswith("during readiness, previous unit restored and ready")
    assert v4["host_state"].endswith(
        "answering /health; its file is the unit it had before this job"
    ), v4["host_state"]
    assert cluster.poll() is None
    assert manage(env, "verifyaudit", "--skip-checks").startswith("OK: ")
