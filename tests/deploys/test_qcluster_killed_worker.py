"""A worker killed in the middle of a job, with real `qcluster` processes on both setups.

The job is waiting for its model to load (readiness) when its whole cluster gets SIGKILL:
no `finally` runs. Then: the request is still `running` and its host lease still held;
right after the lease has expired the job page says "worker lost" (derived from the lease
on the database clock, deploys/jobs/liveness.py), and within one period of the
housekeeping schedule, run by a fresh cluster, the request is `interrupted` with its last
completed step; a second delivery of the same task (what django-q2 does after `retry`)
does not re-run the half-done restart; a new request for the host runs (taking the
expired lease over), and nothing is missing from the audit history.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable

import pytest

from tests.deploys.qcluster_support import Setup, manage, python
from tests.testhost.host import TestHost

pytestmark = [pytest.mark.qcluster, pytest.mark.testhost]

log = logging.getLogger(__name__)

LEASE_S = 4
WAIT_S = 6

SETUP = """
import json, sys, django
django.setup()
from tests.deploys.helpers import approved_request, double_profile, make_host, make_users
from tests.testhost.host import TestHost

testhost = TestHost.from_json(json.loads(sys.argv[1]))
requester, approver = make_users()
host = make_host(testhost)
data = double_profile(
    environment={"VLLM_DOUBLE_LOAD_S": "300"},
    deploy_journal_check_sec=1,
    deploy_ready_timeout_sec=400,
)
# enqueued on commit
request = approved_request(host, requester, approver, data=data, benchmark=False)
print(json.dumps({"request": request.pk, "host": host.pk, "users": [requester.pk, approver.pk]}))
"""

STATE = """
import json, sys, django
django.setup()
from deploys.locks import HostLock
from deploys.models import DeployRequest, JobStep
r = DeployRequest.objects.get(pk=int(sys.argv[1]))
lock = HostLock.objects.filter(host=r.host).values("owner", "request_id", "expires_at").first()
print(json.dumps({
    "status": r.status,
    "reason": r.status_reason,
    "last_step": r.last_step,
    "steps": list(JobStep.objects.filter(request=r).order_by("pk").values_list("name", "status")),
    "lock_owner": (lock or {}).get("owner", ""),
    "lock_request": (lock or {}).get("request_id"),
}))
"""

JOB_PAGE = """
import json, sys, django
django.setup()
from django.contrib.auth import get_user_model
from django.db.models.functions import Now
from django.test import Client
from django.urls import reverse
from deploys.locks import HostLock
pk = int(sys.argv[1])
expired = HostLock.objects.filter(request_id=pk, expires_at__lt=Now()).exists()
client = Client(HTTP_HOST="localhost")
client.force_login(get_user_model().objects.get(pk=int(sys.argv[2])))
page = client.get(reverse("deploys:request_job", args=[pk]))
print(json.dumps({"expired": expired, "status": page.status_code, "html": page.content.decode()}))
"""
# The housekeeping schedule's period (deploys/migrations/0014_…), and how often django-q2's
# scheduler looks at the schedules (django_q/cluster.py: "once a minute (or so)", every
# 30 s of its guard loop).
HOUSEKEEPING_S = 60
SCHEDULER_CYCLE_S = 30

REDELIVER_AND_RERUN = """
import json, sys, django
django.setup()
from django.contrib.auth import get_user_model
from deploys.jobs.queue import enqueue_deploy
from deploys.models import DeployRequest
from deploys.services.deploy_requests import deploy_request_approve, deploy_request_create
from units.services import profile_update
users = get_user_model().objects
old = DeployRequest.objects.get(pk=int(sys.argv[1]))
enqueue_deploy(old.pk)  # django-q2 hands the dead worker's task out again
data = {**old.profile_version.data}
data["environment"] = {**data["environment"], "VLLM_DOUBLE_LOAD_S": "1"}
version = profile_update(profile=old.profile_version.profile, data=data, updated_by=None)
new = deploy_request_create(
    profile_version=version, host=old.host, requested_by=users.get(pk=int(sys.argv[2])),
    acknowledge_warnings=True,
)
new = deploy_request_approve(request=new, approver=users.get(pk=int(sys.argv[3])))
print(json.dumps({"new": new.pk}))
"""


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(1)


# One setup for this scenario (tests/deploys/qcluster_support.py says which runs where).
@pytest.mark.parametrize("qsetup", ["sqlite_orm"], indirect=True)
def test_a_worker_killed_mid_job_is_interrupted_and_nothing_reruns_blindly(
    qsetup: Setup,
    jobhost: TestHost,
    start_clusters: Callable[[Setup, int], list[subprocess.Popen]],
) -> None:
    env = {**qsetup.env, "DEPLOY_LOCK_LEASE_S": str(LEASE_S), "DEPLOY_LOCK_WAIT_S": str(WAIT_S)}
    setup = Setup(qsetup.name, env, qsetup.count_tasks, qsetup.count_unfinished)
    [cluster] = start_clusters(setup, 1)
    made = python(env, SETUP, json.dumps(jobhost.to_json()))
    pk = made["request"]

    def state() -> dict:
        return python(env, STATE, str(pk))

    wait_until(lambda: ["readiness", "running"] in state()["steps"], 120, "the readiness wait")
    os.killpg(cluster.pid, signal.SIGKILL)  # the whole cluster: no `finally` runs
    cluster.wait(10)

    held = state()
    assert held["status"] == "running" and held["lock_request"] == pk, held
    assert held["lock_owner"], held
    [cluster2] = start_clusters(setup, 1)  # its scheduler runs the housekeeping

    def job_page() -> dict:
        return python(env, JOB_PAGE, str(pk), str(made["users"][0]))

    wait_until(lambda: job_page()["expired"], LEASE_S + 10, "the lease to expire")
    page = job_page()  # right after the expiry: read from the lease, nothing swept yet
    assert page["status"] == 200
    assert '<span class="tag status-lost" id="status">Worker lost</span>' in page["html"]
    assert "The worker running this job stopped: its lease on" in page["html"]
    expired_at = time.monotonic()
    wait_until(
        lambda: state()["status"] == "interrupted",
        HOUSEKEEPING_S + SCHEDULER_CYCLE_S + 15,
        "the housekeeping schedule to mark the job interrupted",
    )
    after = state()
    log.info("interrupted %.0f s after the lease expired", time.monotonic() - expired_at)
    assert after["last_step"] == "journal_check"
    assert "last completed step: journal_check, in progress: readiness" in after["reason"]
    assert "no live lease on the host" in after["reason"]
    assert ["readiness", "failed"] in after["steps"], "no step is left 'running' forever"
    assert "Interrupted (the worker stopped)" in job_page()["html"]

    steps_before = len(after["steps"])
    users = made["users"]
    rerun = python(env, REDELIVER_AND_RERUN, str(pk), str(users[0]), str(users[1]))
    wait_until(lambda: setup.count_unfinished() == 0, 240, "the new request to finish")
    assert cluster2.poll() is None

    final = state()
    assert final["status"] == "interrupted" and len(final["steps"]) == steps_before, (
        "the second delivery re-ran nothing"
    )
    new = python(env, STATE, str(rerun["new"]))
    assert new["status"] == "succeeded", new["reason"]
    assert new["lock_owner"] == "", "released at the end"
    assert manage(env, "verifyaudit", "--skip-checks").startswith("OK: ")
    kinds = python(
        env,
        "import json, django; django.setup(); from audit.models import AuditEvent; "
        f"print(json.dumps(list(AuditEvent.objects.filter(object_id='{pk}', "
        "object_type='deploys.deployrequest').order_by('id').values_list('kind', flat=True))))",
    )
    assert kinds[:3] == ["deploy.requested", "deploy.approved", "deploy.started"]
    assert kinds[-1] == "deploy.interrupted" and kinds.count("deploy.interrupted") == 1
