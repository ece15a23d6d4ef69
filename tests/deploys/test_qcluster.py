"""The job system for real: `manage.py qcluster` worker processes on both setups.

(a) SQLite file + django-q2's ORM broker (the one-machine default), (b) PostgreSQL +
Redis (scale-out). Three clusters of two workers each take deploy jobs for approved
requests against the real test host; every job is also delivered a second time (a double
click, a redelivery). Each request must run exactly once across all workers, one job at a
time on the host, and the audit chain must verify.

Workers need a database they share with this process, so each test migrates its own
(a temp SQLite file, or a fresh PostgreSQL database) and talks to it from subprocesses.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import time
from collections.abc import Callable

import pytest

from tests.deploys.qcluster_support import PIPELINE, Setup, manage, python
from tests.testhost.host import TestHost

pytestmark = [pytest.mark.qcluster, pytest.mark.testhost]

CLUSTERS = 3
REQUESTS = 5

SETUP = """
import json, sys, django
django.setup()
from deploys.jobs.queue import enqueue_deploy, enqueue_probe
from tests.deploys.helpers import approved_request, double_profile, make_host, make_users
from tests.testhost.host import TestHost

testhost = TestHost.from_json(json.loads(sys.argv[1]))
requester, approver = make_users()
host = make_host(testhost)
# Approving enqueues the job (on commit), as the web UI does... Each request deploys its own
# unit of the vLLM double on a GPU of its own, through the whole pipeline (no benchmark).
ids = []
for i in range(int(sys.argv[2])):
    request = approved_request(
        host, requester, approver,
        # The unit's own wait for free GPUs looks at every GPU: off, since the GPU-clean
        # step checks the GPUs this service uses.
        data=double_profile(gpu_devices=str(i), tensor_parallel_size=1, gpu_free_wait=False),
        benchmark=False,
    )
    ids.append(request.pk)
# ...and every job is delivered a second time.
for pk in ids:
    enqueue_deploy(pk)
enqueue_probe(host.pk, approver.pk)
print(json.dumps({"requests": ids, "host": host.pk}))
"""

REPORT = """
import json, sys, django
django.setup()
from collections import Counter
from audit.models import AuditEvent
from audit.verify import verify_chain
from deploys.models import DeployRequest, Host, JobStep, PushedUnit
from django_q.models import Task

host = Host.objects.get(pk=int(sys.argv[1]))
jobs = {}
for r in DeployRequest.objects.order_by("pk"):
    steps = list(JobStep.objects.filter(request=r).order_by("pk"))
    durations = {s.name: round(s.duration or 0, 2) for s in steps}
    lock = next((s for s in steps if s.name == "host_lock"), None)
    jobs[r.pk] = {
        "status": r.status,
        "reason": r.status_reason,
        "steps": [[s.name, s.status] for s in steps],
        "held": (
            [lock.finished_at.timestamp(), r.finished_at.timestamp()]
            if lock and lock.finished_at and r.finished_at
            else None
        ),
    "host_state": r.host_state,
    "durations": durations,
        "worker": lock.result.get("owner", "") if lock else "",
        "pushes": PushedUnit.objects.filter(request=r).count(),
        "started": AuditEvent.objects.filter(
            kind="deploy.started", object_id=str(r.pk)
        ).count(),
    }
print(json.dumps({
    "jobs": jobs,
    "tasks": list(Task.objects.values_list("func", "success", "cluster", "result")),
    "systemd_version": host.systemd_version,
    "chain": str(verify_chain()),
}))
"""


def test_every_request_runs_exactly_once_across_workers(
    qsetup: Setup,
    jobhost: TestHost,
    start_clusters: Callable[[Setup, int], list[subprocess.Popen]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Also the happy path through real workers (request → approve → push → clean stop →
    start → journal → healthy → done, audit chain verified) and one job per host at a
    time: five requests for one host, every one delivered twice, on three clusters."""
    started = time.monotonic()
    # The requests (each reads the unit on the host) are made and queued before the three
    # clusters boot: their Django start-ups at once fill both cores, and the test host's
    # sshd then once took over 10 s to open an SFTP channel (CI, two pytest runs at once).
    made = python(qsetup.env, SETUP, json.dumps(jobhost.to_json()), str(REQUESTS))
    clusters = start_clusters(qsetup, CLUSTERS)
    # Every delivery, the probe asked for, and the probe each job queues when it ends.
    expected_tasks = 2 * REQUESTS + 1 + REQUESTS

    # Every delivery ends as a task row; a duplicate of a job still running ends at once,
    # so the jobs themselves are waited for too.
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and (
        qsetup.count_tasks() < expected_tasks or qsetup.count_unfinished() > 0
    ):
        assert all(c.poll() is None for c in clusters), "a qcluster process died"
        time.sleep(1)
    elapsed = time.monotonic() - started
    report = python(qsetup.env, REPORT, str(made["host"]))

    jobs = {int(pk): job for pk, job in report["jobs"].items()}
    assert sorted(jobs) == sorted(made["requests"])
    assert {pk: j["status"] for pk, j in jobs.items()} == dict.fromkeys(jobs, "succeeded"), {
        pk: (j["reason"], j["durations"]) for pk, j in jobs.items()
    }
    for job in jobs.values():
        assert job["pushes"] == 1 and job["started"] == 1, job
        assert job["steps"] == [[s, "succeeded"] for s in PIPELINE] + [["benchmark", "skipped"]]
    held = sorted(j["held"] for j in jobs.values())
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(held)), (
        f"two jobs held the host at once: {held}"
    )
    tasks = [t for t in report["tasks"] if t[0].endswith((".deploy_task", ".probe_task"))]
    assert len(tasks) == expected_tasks and all(t[1] for t in tasks), tasks
    assert len([t for t in tasks if t[0].endswith(".probe_task")]) == REQUESTS + 1, tasks
    assert report["systemd_version"] and report["systemd_version"] >= 252, "probe job ran"
    assert report["chain"].startswith("OK: ")
    assert manage(qsetup.env, "verifyaudit", "--skip-checks").startswith("OK: ")
    with capsys.disabled():
        workers = {j["worker"].rsplit(":", 1)[0] for j in jobs.values()}
        print(
            f"\n[qcluster {qsetup.name}] {REQUESTS} requests x2 deliveries + "
            f"{REQUESTS + 1} probes on {CLUSTERS} clusters: done in {elapsed:.1f}s, "
            f"jobs ran in {len(workers)} worker processes; {report['chain']}"
        )
