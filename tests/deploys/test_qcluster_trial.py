"""The seed's trial through real `manage.py qcluster` workers, on the real test host with
its vLLM double (tests/deploys/qcluster_support.py; docs/trials.md):

1. on both setups (SQLite + ORM broker, PostgreSQL + Redis): production (the double at
   74 tok/s per stream) runs as a version specadmin knows; candidate 1 crashes mid-load
   (the double's `crash_during_load` fault: CUDA out of memory), candidate 2 is the seed's
   n-gram config as its own unit. The crash is recorded failed with its journal lines, the
   n-gram is gated against production's baseline and slower, production runs again at its
   own speed, the host's unit files are as before, `verifyaudit` passes;
2. a cancel during the candidate's readiness (the double loads for minutes) puts
   production back under the trial's own approval;
3. the worker running the trial gets SIGKILL during the candidate's readiness: the trial
   ends interrupted and its page says what runs on the host, read there.
The same trial in-process: test_e2e_trial.py; the driver's paths: test_trial_pipeline.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.deploys.helpers import UNIT_DIR, double_profile
from tests.deploys.qcluster_support import Setup, manage, python
from tests.testhost.host import TestHost

pytestmark = [pytest.mark.qcluster, pytest.mark.testhost]

SEED_SPEED = {"VLLM_DOUBLE_TOKENS_PER_S": "74", "VLLM_DOUBLE_TTFT_MS": "60"}
NGRAM = {"spec_method": "ngram", "spec_num_tokens": 5, "spec_prompt_lookup_max": 4}
NGRAM_FLAG = (
    """--speculative-config '{"method": "ngram", "num_speculative_tokens": 5, """
    """"prompt_lookup_max": 4}'"""
)
# Dies half a second into a five-second load, before /health answers.
CRASH = {
    "environment": {
        "VLLM_DOUBLE_FAULTS": "crash_during_load",
        "VLLM_DOUBLE_LOAD_S": "5",
        "VLLM_DOUBLE_CRASH_AFTER_S": "0.5",
    }
}
# Loads for minutes: the job sits in its readiness wait (the budget fits Q_TIMEOUT).
SLOW = {
    "environment": {"VLLM_DOUBLE_LOAD_S": "300"},
    "deploy_journal_check_sec": 1,
    "deploy_ready_timeout_sec": 240,
}
# Quick measurements: 2 requests of 32 tokens at 1 stream, twice.
POLICY = {
    "concurrency": [1],
    "num_requests": 2,
    "max_tokens": 32,
    "repeats": 2,
    "prompts": "chat",
    "noisy_budget_s": 0,
}
LEASE_S = 4
# A short wait for the host: the job's worst case (the lock wait plus each unit's waits,
# deploys.jobs.runner) must fit the workers' Q_TIMEOUT.
LOCK_WAIT = {"DEPLOY_LOCK_WAIT_S": "60"}

# argv: {"testhost", "production" (profile data), "candidates": [[suffix, changes]]}.
# Production written to the host and started as its version's text (a probe read it),
# each candidate a clone of its profile with `changes` as its own unit; the trial
# requested and approved (enqueued on commit).
TRIAL = """
import json, sys, django
django.setup()
from deploys.running import record_read
from deploys.services.deploy_requests import deploy_request_approve
from deploys.services.trial_requests import trial_request_create
from perf.models import BenchPolicy
from tests.deploys.helpers import UNIT_DIR, make_host, make_users
from tests.testhost.host import TestHost
from units.services import profile_create

args = json.loads(sys.argv[1])
testhost = TestHost.from_json(args["testhost"])
requester, approver = make_users()
site = make_host(testhost)
production = profile_create(data=args["production"], created_by=None)
BenchPolicy.objects.create(profile=production, **args["policy"])
version = production.versions.get()
unit = f"{production.name}.service"
testhost.write_file(f"{UNIT_DIR}/{unit}", version.unit_text)
testhost.systemctl("daemon-reload", check=True)
testhost.systemctl("start", unit, check=True)
record_read(host=site, unit_name=production.name, data=version.unit_text.encode(), step="probe")
candidates = []
for suffix, changes in args["candidates"]:
    data = {**version.data, **changes, "name": f"{production.name}-{suffix}"}
    data["environment"] = {**version.data["environment"], **changes.get("environment", {})}
    candidates.append(profile_create(data=data, created_by=None).versions.get())
trial = trial_request_create(
    host=site, candidates=candidates, requested_by=requester,
    production_unit=production.name, acknowledge_warnings=True,
)
trial = deploy_request_approve(request=trial, approver=approver)
print(json.dumps({
    "request": trial.pk, "unit": unit, "text": version.unit_text,
    "candidates": [[f"{c.profile.name}.service", c.unit_text] for c in candidates],
    "users": [requester.pk, approver.pk],
}))
"""

STATE = """
import json, sys, django
django.setup()
from django.db.models.functions import Now
from audit.models import AuditEvent
from deploys.locks import HostLock
from deploys.models import DeployRequest, JobStep
from perf.models import Baseline
r = DeployRequest.objects.get(pk=int(sys.argv[1]))
baseline = Baseline.objects.filter(profile=r.profile_version.profile, host=r.host).first()
print(json.dumps({
    "status": r.status,
    "reason": r.status_reason,
    "host_state": r.host_state,
    "steps": [
        [s.trial_position, s.name, s.status]
        for s in JobStep.objects.filter(request=r).order_by("pk")
    ],
    "candidates": [
        {"unit": c.unit_name, "outcome": c.outcome, "reason": c.outcome_reason,
         "figures": c.figures}
        for c in r.candidates.order_by("position")
    ],
    "baseline": {"run": baseline.run_id, "tok_s": baseline.run.output_tok_s} if baseline else None,
    "requests": DeployRequest.objects.count(),
    "events": list(
        AuditEvent.objects.filter(object_id=str(r.pk), object_type="deploys.deployrequest")
        .order_by("id").values_list("kind", flat=True)
    ),
    "lease_expired": HostLock.objects.filter(
        request=r, expires_at__lt=Now()
    ).exists(),
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

# What the housekeeping schedule runs (deploys/migrations: every minute), handed to the
# cluster's workers now rather than at the schedule's next turn.
HOUSEKEEPING = """
import json, django
django.setup()
from django_q.tasks import async_task
async_task("deploys.jobs.tasks.fail_abandoned_deploys_task")
print(json.dumps("queued"))
"""

JOB_PAGE = """
import json, sys, django
django.setup()
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
client = Client(HTTP_HOST="localhost")
client.force_login(get_user_model().objects.get(pk=int(sys.argv[2])))
page = client.get(reverse("deploys:request_job", args=[int(sys.argv[1])]))
print(json.dumps({"status": page.status_code, "html": page.content.decode()}))
"""


def start_trial(
    env: dict[str, str], host: TestHost, *candidates: tuple[str, dict[str, Any]]
) -> dict[str, Any]:
    """Production running on `host`, a trial of `candidates` approved; what was made."""
    production = double_profile(environment=SEED_SPEED, deploy_journal_check_sec=2)
    args = {
        "testhost": host.to_json(),
        "production": production,
        "policy": POLICY,
        "candidates": [list(c) for c in candidates],
    }
    made: dict[str, Any] = python(env, TRIAL, json.dumps(args))
    return made


def wait_until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while not (seen := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(1)
    return seen


def finished(env: dict[str, str], pk: int, timeout: float = 240) -> dict[str, Any]:
    def ended() -> dict[str, Any] | None:
        state: dict[str, Any] = python(env, STATE, str(pk))
        return state if state["status"] not in ("approved", "running") else None

    state: dict[str, Any] = wait_until(ended, timeout, f"trial #{pk} to end")
    return state


def in_readiness(env: dict[str, str], pk: int, position: int) -> Callable[[], bool]:
    def check() -> bool:
        state = python(env, STATE, str(pk))
        assert state["status"] in ("approved", "running"), state
        return [position, "readiness", "running"] in state["steps"]

    return check


def unit_files(host: TestHost) -> dict[str, str]:
    """Every vllm-* unit file on the host, by name, with its text."""
    listed = host.nsenter(["sh", "-c", f"ls {UNIT_DIR} | grep '^vllm-' || true"]).stdout.split()
    return {name: host.read_file(f"{UNIT_DIR}/{name}") for name in listed}


def active(host: TestHost, unit: str) -> str:
    return host.systemctl("is-active", unit).stdout.strip()


def worker_connected_to(cluster: subprocess.Popen[bytes], port: int) -> int:
    """The PID of the cluster's process holding a TCP connection to `port` (the trial's
    SSH transport to the test host): the worker running the trial; 0 when none does."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                inodes.add(f"socket:[{fields[9]}]")
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            # After the command's name: state, ppid, pgrp, sid (the cluster's own, setsid).
            sid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[3])
            if sid == cluster.pid and any(
                os.readlink(fd) in inodes for fd in (proc / "fd").iterdir()
            ):
                return int(proc.name)
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile, or not ours to read
    return 0


def test_the_seeds_trial_through_workers_gates_ngram_slower_and_puts_production_back(
    qsetup: Setup,
    jobhost: TestHost,
    start_clusters: Callable[[Setup, int], list[subprocess.Popen[bytes]]],
) -> None:
    env = qsetup.env = {**qsetup.env, **LOCK_WAIT}
    [cluster] = start_clusters(qsetup, 1)
    before = unit_files(jobhost)
    made = start_trial(env, jobhost, ("crash", CRASH), ("ngram", NGRAM))
    (crash_unit, _), (ngram_unit, ngram_text) = made["candidates"]
    assert NGRAM_FLAG in ngram_text
    trial = finished(env, made["request"])

    assert trial["status"] == "succeeded", trial["reason"]
    crash, ngram = trial["candidates"]
    assert crash["outcome"] == "failed", crash
    # A crash half a second into the load falls in the journal check's window, or, where a
    # loaded machine starts the double more slowly than that window, in readiness: either
    # step records it with the journal's lines.
    assert crash["figures"]["evidence"]["step"] in ("journal_check", "readiness"), crash["figures"]
    assert any("CUDA out of memory" in line for line in crash["figures"]["evidence"]["lines"])
    assert ngram["outcome"] == "slower", ngram
    assert ngram["figures"]["baseline_run"] == trial["baseline"]["run"]
    assert "n-gram k=5: 1" in trial["reason"]
    assert "% slower than production at 1 stream; production restored at " in trial["reason"]
    # production back at its own speed, confirmed by its own measurement
    restored = float(trial["reason"].rsplit("production restored at ", 1)[1].split()[0])
    assert restored == pytest.approx(trial["baseline"]["tok_s"], rel=0.05)
    assert active(jobhost, made["unit"]) == "active"
    assert unit_files(jobhost) == {**before, made["unit"]: made["text"]}
    assert f"{crash_unit}: removed" in trial["host_state"]
    assert f"{ngram_unit}: removed" in trial["host_state"]
    assert f"{made['unit']} (production): active (running)" in trial["host_state"]
    assert cluster.poll() is None
    assert manage(env, "verifyaudit", "--skip-checks").startswith("OK: ")


@pytest.mark.parametrize("qsetup", ["postgres_redis"], indirect=True)
def test_a_cancel_during_a_candidates_readiness_puts_production_back_without_approval(
    qsetup: Setup,
    jobhost: TestHost,
    start_clusters: Callable[[Setup, int], list[subprocess.Popen[bytes]]],
) -> None:
    env = qsetup.env = {**qsetup.env, **LOCK_WAIT}
    start_clusters(qsetup, 1)
    made = start_trial(env, jobhost, ("slow", SLOW))
    [(slow_unit, _)] = made["candidates"]
    pk = made["request"]
    wait_until(in_readiness(env, pk, 1), 120, "the candidate's readiness wait")
    requests = python(env, STATE, str(pk))["requests"]
    python(env, CANCEL, str(pk), str(made["users"][0]))
    trial = finished(env, pk, timeout=120)

    assert trial["status"] == "cancelled", trial["reason"]
    assert f"during readiness of candidate 1 ({slow_unit})" in trial["reason"]
    assert "production restored at " in trial["reason"]
    assert trial["candidates"][0]["outcome"] == "cancelled"
    assert trial["events"].count("deploy.approved") == 1, trial["events"]
    assert trial["requests"] == requests, "no second request to approve"
    assert f"{made['unit']} (production): active (running)" in trial["host_state"]
    assert "its file is production's approved text" in trial["host_state"]
    assert active(jobhost, made["unit"]) == "active"
    assert jobhost.read_file(f"{UNIT_DIR}/{made['unit']}") == made["text"]
    assert slow_unit not in unit_files(jobhost)


@pytest.mark.parametrize("qsetup", ["sqlite_orm"], indirect=True)
def test_a_worker_killed_mid_trial_leaves_it_interrupted_saying_what_runs_on_the_host(
    qsetup: Setup,
    jobhost: TestHost,
    start_clusters: Callable[[Setup, int], list[subprocess.Popen[bytes]]],
) -> None:
    env = {**qsetup.env, **LOCK_WAIT, "DEPLOY_LOCK_LEASE_S": str(LEASE_S)}
    setup = Setup(qsetup.name, env, qsetup.count_tasks, qsetup.count_unfinished)
    [cluster] = start_clusters(setup, 1)
    made = start_trial(env, jobhost, ("slow", SLOW))
    [(slow_unit, _)] = made["candidates"]
    pk = made["request"]
    wait_until(in_readiness(env, pk, 1), 120, "the candidate's readiness wait")
    worker = wait_until(
        lambda: worker_connected_to(cluster, jobhost.port), 10, "the worker's connection"
    )
    os.kill(worker, signal.SIGKILL)  # no `finally` runs; the cluster starts a new worker

    wait_until(lambda: python(env, STATE, str(pk))["lease_expired"], LEASE_S + 15, "the lease")
    python(env, HOUSEKEEPING)
    trial = wait_until(
        lambda: (s := python(env, STATE, str(pk)))["status"] != "running" and s,
        60,
        "the trial to be marked interrupted",
    )

    assert trial["status"] == "interrupted", trial["reason"]
    assert "in progress: readiness" in trial["reason"]
    assert (
        f"{slow_unit} (candidate 1) was started by the trial and not stopped since"
        in trial["reason"]
    )
    assert f"{made['unit']} (production) was stopped by the trial" in trial["reason"]
    # what the page says runs is what the host runs
    assert f"{made['unit']} (production): inactive (dead)" in trial["host_state"]
    assert f"{slow_unit} (candidate 1): active (running)" in trial["host_state"]
    assert trial["host_state"].endswith("(read when the job was marked interrupted)")
    assert active(jobhost, made["unit"]) == "inactive"
    assert active(jobhost, slow_unit) == "active"
    page = python(env, JOB_PAGE, str(pk), str(made["users"][0]))
    assert page["status"] == 200
    assert "Interrupted (the worker stopped)" in page["html"]
    assert f"{slow_unit} (candidate 1): active (running)" in page["html"]
    assert cluster.poll() is None, "the cluster outlived its worker"
    assert manage(env, "verifyaudit", "--skip-checks").startswith("OK: ")
