"""The seed deployment's story as whole deploy jobs.

The seed measured 74 tok/s single stream, switched on n-gram speculative decoding and
found it slower, by hand, after the fact. Here: a baseline profile is deployed through the
real deploy job (runner: request, approval, push, GPU-clean restart, journal check,
readiness, benchmark) on a real systemd + sshd test host running the vLLM double at 74
tok/s per stream, bound to loopback (measured by the client on the host); its first
benchmark becomes the baseline. Then the n-gram variant (`--speculative-config '{"method":
"ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4}'`), which the double serves
15% slower (VLLM_DOUBLE_SPEC_SPEED_FACTOR=0.85: the seed measured 9–26%), is deployed:
the perf step's gate says "regressed", the job rolls back, the host runs the baseline
unit again, and the history says why with the gate's figures.

The same story runs once in-process (the runner, as the worker's task wrapper calls it)
and once through real `qcluster` workers on both setups (SQLite + ORM broker, PostgreSQL
+ Redis; tests/deploys/qcluster_support.py).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser

from audit.models import AuditEvent, AuditKind
from audit.verify import verify_chain
from deploys.jobs import queue, runner
from deploys.models import DeployRequest, Host, JobStep
from deploys.services.deploy_requests import deploy_request_approve, deploy_request_create
from perf.models import Baseline, BenchPolicy, BenchRun
from perf.services import BASELINE_ACCEPTED, REGRESSED
from tests.deploys.conftest import (  # noqa: F401 (fixtures)
    module_testhost,
    postgres_redis,
    qsetup,
    sqlite_orm,
    start_clusters,
)
from tests.deploys.helpers import (
    UNIT_DIR,
    double_profile,
    make_host,
    make_users,
    service_port,
)
from tests.deploys.qcluster_support import Setup, manage, python
from tests.deploys.test_qcluster_pipeline import NEXT
from tests.testhost.host import TestHost
from units.services import profile_create, profile_update

pytestmark = pytest.mark.testhost

# The double's speed (tests/doubles/vllm_double_config.py): 74 tok/s per stream after a
# 60 ms first token; exactly 0.85 of that with any speculative config (no draft token
# accepted, no step overhead: the factor alone).
SEED_SPEED = {
    "VLLM_DOUBLE_TOKENS_PER_S": "74",
    "VLLM_DOUBLE_TTFT_MS": "60",
    "VLLM_DOUBLE_SPEC_SPEED_FACTOR": "0.85",
    "VLLM_DOUBLE_ACCEPTED_PER_STEP": "0",
    "VLLM_DOUBLE_DRAFT_OVERHEAD": "0",
}
# The seed's n-gram variant (units/management/commands/loaddemo.py NGRAM_CHANGES).
NGRAM = {"spec_method": "ngram", "spec_num_tokens": 5, "spec_prompt_lookup_max": 4}
NGRAM_FLAG = (
    """--speculative-config '{"method": "ngram", "num_speculative_tokens": 5, """
    """"prompt_lookup_max": 4}'"""
)
# Quick measurements: 4 requests × 32 tokens at concurrency 1, twice.
POLICY = {"concurrency": [1], "num_requests": 4, "max_tokens": 32, "repeats": 2, "prompts": "chat"}


@pytest.fixture
def seedhost(module_testhost: TestHost) -> Iterator[TestHost]:  # noqa: F811 (fixture)
    """The module's own host (its units hold 'GPU memory'), with no vllm-* unit left."""
    yield module_testhost
    module_testhost.nsenter(["sh", "-c", "systemctl stop 'vllm-*' 2>/dev/null; true"])


@pytest.fixture
def pair(transactional_db: None) -> tuple[AbstractBaseUser, AbstractBaseUser]:
    return make_users()


@pytest.fixture(autouse=True)
def queued(monkeypatch: pytest.MonkeyPatch) -> None:
    """Approving hands the job to django-q2 on commit; here the test runs it itself."""
    monkeypatch.setattr(queue, "async_task", lambda *args, **kwargs: None)


def run(request: DeployRequest) -> DeployRequest:
    runner.run_deploy(request.pk)
    request.refresh_from_db()
    return request


def step(request: DeployRequest, name: str, phase: str = "main") -> JobStep:
    return JobStep.objects.get(request=request, name=name, phase=phase)


def ngram_variant(request: DeployRequest, pair: Any) -> DeployRequest:
    """The next version of the request's profile with the seed's n-gram config, approved."""
    profile = request.profile_version.profile
    data = {**request.profile_version.data, **NGRAM}
    version = profile_update(profile=profile, data=data, updated_by=None, comment="n-gram")
    created = deploy_request_create(
        profile_version=version, host=request.host, requested_by=pair[0], acknowledge_warnings=True
    )
    return deploy_request_approve(request=created, approver=pair[1])


def running_argv(host: TestHost, unit: str) -> list[str]:
    """What the unit's main process runs now (its /proc cmdline on the host)."""
    pid = host.systemctl("show", "-p", "MainPID", "--value", unit).stdout.strip()
    assert pid not in ("", "0"), f"{unit} has no main process"
    return host.nsenter(["cat", f"/proc/{pid}/cmdline"]).stdout.split("\0")[:-1]


def test_the_seeds_ngram_variant_regresses_and_the_job_puts_the_74_tok_s_baseline_back(
    seedhost: TestHost, pair: Any
) -> None:
    site: Host = make_host(seedhost)
    data = double_profile(environment=SEED_SPEED, port=service_port())
    # The benchmark policy before the request: it is part of what is approved.
    profile = profile_create(data=data, created_by=None)
    BenchPolicy.objects.create(profile=profile, **POLICY)
    requester, approver = pair
    baseline = deploy_request_approve(
        request=deploy_request_create(
            profile_version=profile.versions.get(),
            host=site,
            requested_by=requester,
            acknowledge_warnings=True,
        ),
        approver=approver,
    )
    unit = f"{baseline.unit_name}.service"

    # 1. the baseline: deployed, measured by the client on the host, accepted
    baseline = run(baseline)
    assert baseline.status == "succeeded", baseline.status_reason
    bench = step(baseline, "benchmark")
    assert (bench.status, bench.result["baseline"]) == ("succeeded", "set"), bench.log
    assert f"with the client on {site.name} as " in bench.log
    assert bench.result["client"] == "host"
    assert [c["kind"] for c in bench.commands["records"]].count("forward") == 0
    first_run = BenchRun.objects.get(pk=bench.result["bench_run"])
    assert Baseline.objects.get(profile=profile, host=site).run == first_run
    assert AuditEvent.objects.get(kind=BASELINE_ACCEPTED).payload["run"] == first_run.pk

    # 2. the n-gram variant: the real perf step's gate fires, the job rolls back
    variant = ngram_variant(baseline, pair)
    assert NGRAM_FLAG in variant.unit_text and NGRAM_FLAG not in baseline.unit_text
    variant = run(variant)
    assert variant.status == "rolled_back", variant.status_reason
    gate = step(variant, "benchmark")
    assert (gate.status, gate.result["outcome"], gate.result["gate"]) == (
        "failed",
        "regressed",
        "regressed",
    )
    assert gate.result["baseline_run"] == first_run.pk
    assert variant.status_reason.startswith(
        f"benchmark: slower than baseline run #{first_run.pk} (threshold 5%): "
        "Output tokens/s at 1 stream down 1"
    ), variant.status_reason
    rollback = JobStep.objects.filter(request=variant, phase="rollback").order_by("pk")
    assert [(s.name, s.status) for s in rollback] == [
        (name, "succeeded")
        for name in ("restore", "stop", "gpu_clean", "start", "journal_check", "readiness")
    ]

    # 3. the host runs the baseline unit again: its file, and the process systemd started
    assert seedhost.read_file(f"{UNIT_DIR}/{unit}") == baseline.unit_text
    state = seedhost.systemctl("show", "-p", "ActiveState,NeedDaemonReload", unit).stdout
    assert state.split() == ["ActiveState=active", "NeedDaemonReload=no"]
    argv = running_argv(seedhost, unit)
    assert "serve" in argv and "/models/double-model" in argv, argv
    assert "--speculative-config" not in argv
    assert variant.host_state.endswith(
        "active (running), answering /health; its file is the unit it had before this job"
    )

    # 4. the history says why, with the gate's figures; the baseline stays the baseline
    regressed = AuditEvent.objects.get(kind=REGRESSED)
    assert regressed.payload["request"] == variant.pk and regressed.payload["rollback"] is True
    assert regressed.payload["baseline_run"] == first_run.pk
    down = [r for r in regressed.payload["reasons"] if r.startswith("Output tokens/s")]
    assert down and "(" in down[0] and "→" in down[0], regressed.payload["reasons"]
    failed = AuditEvent.objects.get(
        kind=AuditKind.JOB_STEP_FAILED, payload__request=variant.pk, payload__step="benchmark"
    )
    assert failed.payload["outcome"] == "regressed"
    assert "Output tokens/s at 1 stream down" in failed.payload["reason"]
    assert AuditEvent.objects.filter(
        kind=AuditKind.DEPLOY_ROLLED_BACK, object_id=str(variant.pk)
    ).exists()
    assert Baseline.objects.get(profile=profile, host=site).run == first_run
    assert verify_chain().ok


# -- the same through real workers ------------------------------------------------------

# The profile and its benchmark policy first, then the request (enqueued on commit), so the
# worker's first benchmark already measures with the quick policy.
SEED_SETUP = """
import json, sys, django
django.setup()
from deploys.services.deploy_requests import deploy_request_approve, deploy_request_create
from perf.models import BenchPolicy
from tests.deploys.helpers import double_profile, make_host, make_users, service_port
from tests.testhost.host import TestHost
from units.services import profile_create

testhost = TestHost.from_json(json.loads(sys.argv[1]))
speed, policy = json.loads(sys.argv[2]), json.loads(sys.argv[3])
requester, approver = make_users()
host = make_host(testhost)
data = double_profile(environment=speed, port=service_port())
profile = profile_create(data=data, created_by=None)
BenchPolicy.objects.create(profile=profile, **policy)
request = deploy_request_create(
    profile_version=profile.versions.get(), host=host, requested_by=requester,
    acknowledge_warnings=True,
)
request = deploy_request_approve(request=request, approver=approver)
print(json.dumps({"request": request.pk, "users": [requester.pk, approver.pk]}))
"""

SEED_STATE = """
import json, sys, django
django.setup()
from audit.models import AuditEvent
from deploys.models import DeployRequest, JobStep
from perf.models import Baseline
r = DeployRequest.objects.get(pk=int(sys.argv[1]))
bench = JobStep.objects.filter(request=r, name="benchmark", phase="main").first()
baseline = Baseline.objects.filter(profile=r.profile_version.profile, host=r.host).first()
regressed = AuditEvent.objects.filter(kind="bench.regressed", payload__request=r.pk).first()
print(json.dumps({
    "status": r.status,
    "reason": r.status_reason,
    "host_state": r.host_state,
    "unit": r.unit_name + ".service",
    "unit_text": r.unit_text,
    "rollback": [
        [s.name, s.status] for s in JobStep.objects.filter(request=r, phase="rollback")
        .order_by("pk")
    ],
    "bench": bench.result if bench else None,
    "baseline_run": baseline.run_id if baseline else None,
    "regressed": regressed.payload if regressed else None,
}))
"""


def finished(setup: Setup, pk: int, timeout: float = 240) -> dict[str, Any]:
    """The request's state once no job is queued or running (watched with one cheap query,
    not a Django process per look: the machine is small)."""
    deadline = time.monotonic() + timeout
    while setup.count_unfinished() and time.monotonic() < deadline:
        time.sleep(0.5)
    state = python(setup.env, SEED_STATE, str(pk))
    assert state["status"] not in ("approved", "running"), f"request #{pk}: {state['status']}"
    return state


@pytest.mark.qcluster
# One setup for this scenario (tests/deploys/qcluster_support.py says which runs where).
@pytest.mark.parametrize("qsetup", ["postgres_redis"], indirect=True)
def test_through_real_workers_the_ngram_variant_is_rolled_back_to_the_accepted_baseline(
    qsetup: Setup,  # noqa: F811 (fixture)
    seedhost: TestHost,
    start_clusters: Callable[[Setup, int], list[subprocess.Popen]],  # noqa: F811 (fixture)
) -> None:
    env = qsetup.env
    [cluster] = start_clusters(qsetup, 1)
    made = python(
        env, SEED_SETUP, json.dumps(seedhost.to_json()), json.dumps(SEED_SPEED), json.dumps(POLICY)
    )
    baseline = finished(qsetup, made["request"])
    assert baseline["status"] == "succeeded", baseline["reason"]
    assert baseline["bench"]["baseline"] == "set"
    assert baseline["baseline_run"] == baseline["bench"]["bench_run"]

    users = [str(u) for u in made["users"]]
    variant_pk = python(env, NEXT, str(made["request"]), *users, json.dumps(NGRAM))["request"]
    variant = finished(qsetup, variant_pk)
    assert variant["status"] == "rolled_back", variant["reason"]
    assert NGRAM_FLAG in variant["unit_text"]
    assert variant["bench"]["outcome"] == "regressed"
    assert variant["reason"].startswith(
        f"benchmark: slower than baseline run #{baseline['baseline_run']} (threshold 5%): "
        "Output tokens/s at 1 stream down 1"
    ), variant["reason"]
    assert variant["rollback"] == [
        [name, "succeeded"]
        for name in ("restore", "stop", "gpu_clean", "start", "journal_check", "readiness")
    ]
    assert variant["regressed"]["baseline_run"] == baseline["baseline_run"]
    assert any(r.startswith("Output tokens/s") for r in variant["regressed"]["reasons"])
    assert variant["baseline_run"] == baseline["baseline_run"], "the baseline stays"

    unit = variant["unit"]
    assert seedhost.read_file(f"{UNIT_DIR}/{unit}") == baseline["unit_text"]
    assert "--speculative-config" not in running_argv(seedhost, unit)
    assert cluster.poll() is None
    assert manage(env, "verifyaudit", "--skip-checks").startswith("OK: ")
