"""The trial benchmark's figures (benchmarks/trial.py sets up Django and the test host,
then calls `run`)."""

from __future__ import annotations

import statistics
import time
from typing import Any

from benchmarks.restart_figures import SEED_RESTART, _own_from_journal
from deploys.jobs import queue, runner
from deploys.jobs.service_steps import journal_cursor
from deploys.models import DeployRequest, JobStep, TrialCandidate
from deploys.running import record_read
from deploys.services.deploy_requests import deploy_request_approve
from deploys.services.trial_requests import Candidate, trial_request_create
from hostops.channel.ssh import SSHTransport
from perf.models import BenchPolicy
from tests.deploys.conftest import transport_for
from tests.deploys.helpers import UNIT_DIR, double_profile, make_host, make_users, service_port
from tests.perf.quick_policy import QUICK_BENCH_POLICY
from tests.testhost.host import TestHost
from units.models import ProfileVersion
from units.services import profile_create

PRODUCTION = {"VLLM_DOUBLE_TOKENS_PER_S": "74", "VLLM_DOUBLE_TTFT_MS": "60"}
CANDIDATES = {
    "ngram-k5": {"spec_method": "ngram", "spec_num_tokens": 5, "spec_prompt_lookup_max": 4},
    "ngram-k3": {"spec_method": "ngram", "spec_num_tokens": 3, "spec_prompt_lookup_max": 4},
    "ngram-k8": {"spec_method": "ngram", "spec_num_tokens": 8, "spec_prompt_lookup_max": 4},
}
# The parts of a candidate's turn that are its own, not the pipeline's: its stop, its load
# (readiness waits for it) and its benchmark.
OWN_STEPS = ("stop", "readiness", "candidate_benchmark")
# A candidate's steps while production serves (its checks before the stop, its unit
# file's removal after production is back): no downtime (deploys/jobs/trial.py).
WHILE_PRODUCTION_SERVES = ("candidate_preflight", "vllm_check", "remove")


def run(testhost: TestHost) -> int:
    queue.async_task = lambda *a, **k: None  # the benchmark runs the job itself
    requester, approver = make_users()
    site = make_host(testhost, name="trial-bench")
    port = service_port()
    production = profile_create(
        data=double_profile(environment=PRODUCTION, port=port), created_by=None
    )
    BenchPolicy.objects.create(profile=production, **QUICK_BENCH_POLICY)
    version = production.versions.get()
    unit = f"{production.name}.service"
    testhost.write_file(f"{UNIT_DIR}/{unit}", version.unit_text)
    testhost.systemctl("daemon-reload")
    testhost.systemctl("start", unit)
    record_read(host=site, unit_name=production.name, data=version.unit_text.encode(), step="probe")
    candidates = [_candidate(version, label, fields) for label, fields in CANDIDATES.items()]
    print(
        f"trial benchmark: test host {testhost.name}, 8-GPU double, production "
        f"{production.name} at 74 tok/s per stream, {len(candidates)} candidates; "
        "shared machine: figures are noisy"
    )

    trial = trial_request_create(
        host=site,
        candidates=[Candidate(v) for v in candidates],
        requested_by=requester,
        production_unit=production.name,
        acknowledge_warnings=True,
    )
    trial = deploy_request_approve(request=trial, approver=approver)
    started = time.monotonic()
    runner.run_deploy(trial.pk)
    wall = time.monotonic() - started
    trial.refresh_from_db()
    print(f"\ntrial #{trial.pk}: {trial.status} in {wall:.1f} s: {trial.status_reason}")
    _print_steps(trial)
    overheads = []
    for row in trial.candidates.order_by("position"):
        overhead = _overhead(trial, row.position)
        overheads.append(overhead)
        print(
            f"  {row.position}. {row.unit_name}: {row.outcome} "
            f"({row.outcome_reason[:120]}); pipeline overhead {overhead:.2f} s"
        )
    seed = _seed_overhead(transport_for(testhost), unit, port)
    testhost.systemctl("stop", unit)
    ours = statistics.median(overheads) if overheads else float("nan")
    print("\noverhead per candidate beyond its stop, load and benchmark (target ≤ 5 s)")
    print(f"  specadmin's trial: median {ours:.2f} s (n={len(overheads)})")
    if seed is None:
        print("  seed's restart script: not measured (its journal lacked a moment)")
    else:
        print(
            f"  seed's restart script: {seed:.2f} s each; a candidate the seed's way runs it "
            f"twice (in, and production back): {2 * seed:.2f} s, before a person reads the "
            "journal and runs the benchmark by hand"
        )
    slower = all(r.outcome == TrialCandidate.Outcome.SLOWER for r in trial.candidates.all())
    met = trial.status == DeployRequest.Status.SUCCEEDED and ours <= 5.0
    print(
        f"RESULT trial {trial.status}; candidates slower than production: {slower}; "
        f"overhead per candidate {ours:.2f} s (target ≤ 5 s: {'met' if met else 'missed'})"
    )
    return 0


def _candidate(version: ProfileVersion, label: str, fields: dict[str, Any]) -> ProfileVersion:
    data = {**version.data, **fields, "name": f"{version.profile.name}-{label}"}
    return profile_create(data=data, created_by=None).versions.get()


def _print_steps(trial: DeployRequest) -> None:
    """Every step: the unit it acted on, when it started (from the job's start), how long."""
    steps = list(JobStep.objects.filter(request=trial).order_by("started_at", "pk"))
    origin = steps[0].started_at if steps else None
    for s in steps:
        took = (s.finished_at - s.started_at).total_seconds() if s.finished_at else float("nan")
        at = (s.started_at - origin).total_seconds() if origin else 0.0
        print(f"    {at:7.2f} s  {s.trial_position!s:>4}  {s.name:<22} {took:6.2f} s  {s.status}")


def _overhead(trial: DeployRequest, position: int) -> float:
    """A candidate's turn while production is down, from its first step's start to its
    last step's end, minus its own parts (OWN_STEPS)."""
    steps = list(
        JobStep.objects.filter(request=trial, trial_position=position).exclude(
            name__in=WHILE_PRODUCTION_SERVES
        )
    )
    ended = [s for s in steps if s.finished_at is not None]
    if not ended:
        return float("nan")
    span = (max(s.finished_at for s in ended) - min(s.started_at for s in steps)).total_seconds()
    own = sum((s.finished_at - s.started_at).total_seconds() for s in ended if s.name in OWN_STEPS)
    return span - own


def _seed_overhead(ssh: SSHTransport, unit: str, port: int) -> float | None:
    """The seed's restart script once on production: its duration minus the service's own
    stop and load, read from the journal."""
    cursor = journal_cursor(ssh)
    started = time.monotonic()
    ssh.run(["sh", "-c", SEED_RESTART, "sh", unit, str(port)], timeout=300)
    total = time.monotonic() - started
    own = _own_from_journal(ssh, unit, cursor)
    return None if own is None else total - own
