"""The restart benchmark's three figures, each against the seed's way in the same run.

A module of its own because it needs Django set up: `benchmarks/restart.py` (whose docstring
says what each figure measures and how to run it) points the settings at a throwaway
database, calls `django.setup()`, boots the test host, then imports this and calls `run`.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

from deploys.jobs import benchmark as bench_hook
from deploys.jobs import queue, runner
from deploys.jobs.service_steps import journal_cursor
from deploys.models import DeployRequest, Host, JobStep
from deploys.services.deploy_requests import deploy_request_approve, deploy_request_create
from deploys.services.unit_requests import restart_request_create
from hostops.channel.ssh import SSHTransport
from hostops.gpu_clean import CleanPolicy, ServiceIdentity, clean_gpus
from tests.deploys.conftest import transport_for
from tests.deploys.helpers import (
    approved_request,
    double_profile,
    gpu_pids,
    make_host,
    make_users,
)
from tests.testhost.host import TestHost
from units.models import ProfileVersion
from units.rendering import render_unit
from units.services import profile_update

SEED_SLEEPS = (5, 3, 2)
SEED_BUDGET_S = 30  # the seed's readiness wait in this benchmark (45 min in production)
SEED_HEALTH_EVERY_S = 5
LOAD_S = 3.0  # the double's model load

# The seed's restart, as its scripts did it: fixed sleeps between the steps.
SEED_RESTART = r"""
unit=$1; port=$2
systemctl stop "$unit"
sleep 5; nvidia-smi --query-compute-apps=pid --format=csv,noheader >/dev/null
sleep 3; nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits >/dev/null
sleep 2
systemctl start "$unit"
until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do sleep 5; done
"""


@dataclass
class Bench:
    """What every figure works on: the test host (its `Host` row and an SSH connection to
    it), the two admins a request needs (four eyes), and how many runs a figure makes."""

    testhost: TestHost
    site: Host
    ssh: SSHTransport
    requester: Any
    approver: Any
    runs: int

    @property
    def seed_runs(self) -> int:
        """The seed's way is slow (fixed sleeps): half the runs, at least one."""
        return max(1, self.runs // 2)

    def deploy(self, data: dict[str, Any]) -> DeployRequest:
        """A new profile deployed by a whole job, run here (no worker)."""
        return self._run(approved_request(self.site, self.requester, self.approver, data=data))

    def deploy_version(self, version: ProfileVersion) -> DeployRequest:
        """Another version of a deployed profile, through request, approval and job."""
        request = deploy_request_create(
            profile_version=version,
            host=self.site,
            requested_by=self.requester,
            acknowledge_warnings=True,
        )
        return self._run(deploy_request_approve(request=request, approver=self.approver))

    def restart(self, unit_name: str) -> DeployRequest:
        """A restart job for a deployed unit."""
        request = restart_request_create(
            host=self.site, unit_name=unit_name, requested_by=self.requester
        )
        return self._run(deploy_request_approve(request=request, approver=self.approver))

    def _run(self, request: DeployRequest) -> DeployRequest:
        runner.run_deploy(request.pk)
        request.refresh_from_db()
        return request


def median(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} s" if values else "n/a"


def spread(values: list[float]) -> str:
    return f"{min(values):.3f}–{max(values):.3f} s" if values else "n/a"


def run(testhost: TestHost, runs: int) -> int:
    """All three figures, then whether every target was met."""
    queue.async_task = lambda *a, **k: None  # the benchmark runs the jobs itself
    bench_hook.register(None)
    requester, approver = make_users()
    site = make_host(testhost, name="bench-host")
    bench = Bench(testhost, site, transport_for(testhost), requester, approver, runs)
    print(
        f"restart benchmark: test host {testhost.name}, 8-GPU double, vLLM double "
        f"(model load {LOAD_S:g} s), {runs} runs per figure; shared machine: figures are noisy"
    )
    clean = gpu_clean_figure(bench)
    detected = config_error_figure(bench)
    overheads = overhead_figure(bench)
    ok = (
        bool(clean)
        and max(clean) < 1.0
        and bool(detected)
        and max(detected) < 10.0
        and bool(overheads)
        and statistics.median(overheads) < 5.0
    )
    print("\nRESULT: " + ("all three targets met" if ok else "a target was missed (see above)"))
    return 0


# 1. last GPU process gone → all GPUs verified clean ------------------------------------


def gpu_clean_figure(bench: Bench) -> list[float]:
    """Restarts of a unit whose EngineCore escapes it (the double's `leftover_worker`):
    our GPU-clean step's own report against the seed's fixed sleeps. Returns ours."""
    leaky = double_profile(
        environment={"VLLM_DOUBLE_FAULTS": "leftover_worker", "VLLM_DOUBLE_LOAD_S": "0.5"},
        deploy_kill_grace_sec=0,
    )
    first = bench.deploy(leaky)
    assert first.status == "succeeded", first.status_reason
    ours = _values(_clean_after_last_gone(bench, first.unit_name) for _ in range(bench.runs))
    seed = _values(
        _seed_clean_after_last_gone(bench, first.unit_name) for _ in range(bench.seed_runs)
    )
    _kill_gpu_holders(bench)
    # the same clean check specadmin does, for comparison of the check alone
    check = clean_gpus(bench.ssh, ServiceIdentity(), CleanPolicy())
    print("\n1. last GPU process gone → all GPUs verified clean (target < 1 s)")
    print(f"   specadmin GPU-clean step: median {median(ours)} ({spread(ours)}, n={len(ours)})")
    print(f"   seed, sleep 5 … 3 … 2 then nvidia-smi: median {median(seed)} (n={len(seed)})")
    print(f"   (one reading of all 8 GPUs over SSH here: {check.polls} poll, clean={check.clean})")
    return ours


def _clean_after_last_gone(bench: Bench, unit_name: str) -> float | None:
    """One restart job: from the moment its GPU-clean step saw the last PID exit to the
    moment it read the GPUs clean (None when the job failed or nothing was left over)."""
    done = bench.restart(unit_name)
    clean = JobStep.objects.get(request=done, name="gpu_clean", phase="main").result
    if done.status != "succeeded" or clean.get("last_gone_after_s") is None:
        return None
    return clean["verified_after_s"] - clean["last_gone_after_s"]


def _seed_clean_after_last_gone(bench: Bench, unit_name: str) -> float | None:
    """The seed's way on the same host: stop, kill what is left on the GPUs, then its
    sleeps before nvidia-smi (None when nvidia-smi still listed a process)."""
    testhost, ssh = bench.testhost, bench.ssh
    testhost.systemctl("stop", f"{unit_name}.service")
    _kill_gpu_holders(bench)
    testhost.systemctl("start", "--no-block", f"{unit_name}.service")
    deadline = time.monotonic() + 30
    while not gpu_pids(testhost) and time.monotonic() < deadline:
        time.sleep(0.1)
    testhost.systemctl("stop", f"{unit_name}.service")
    leftovers = gpu_pids(testhost)
    ssh.run(["kill", "-KILL", *map(str, leftovers)])
    gone = time.monotonic()
    for pause in SEED_SLEEPS:
        ssh.run(["sleep", str(pause)], timeout=pause + 30)
    smi = ssh.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"])
    return None if smi.stdout_text.strip() else time.monotonic() - gone


def _kill_gpu_holders(bench: Bench) -> None:
    pids = gpu_pids(bench.testhost)
    if pids:
        bench.ssh.run(["kill", "-KILL", *map(str, pids)])


# 2. start → fatal config error detected ------------------------------------------------


def config_error_figure(bench: Bench) -> list[float]:
    """Deploys of a speculative config only the engine rejects (the host's vLLM is a
    wrapper, so the vLLM check skips): when our journal check saw the error, against the
    seed's readiness-only wait. Returns ours."""
    wrapper = "/opt/wrapped/bin/vllm"
    bench.testhost.write_file(wrapper, '#!/bin/sh\nexec /usr/local/bin/vllm "$@"\n', mode=0o755)
    good = bench.deploy(
        double_profile(environment={"VLLM_DOUBLE_VERSION": "0.11.0"}, vllm_executable=wrapper)
    )
    assert good.status == "succeeded", good.status_reason
    detected = _values(_journal_check_detection(bench, good) for _ in range(bench.runs))
    seed_detect = _seed_detection(bench, good.unit_name, good.profile_version.data)
    print("\n2. start → fatal config error detected (target < 10 s)")
    print(
        f"   specadmin journal check: median {median(detected)} ({spread(detected)}, "
        f"n={len(detected)})"
    )
    print(
        f"   seed, /health every {SEED_HEALTH_EVERY_S} s until its budget: "
        f"{seed_detect:.3f} s (budget {SEED_BUDGET_S} s here; 45 min in production)"
    )
    bench.testhost.systemctl("stop", f"{good.unit_name}.service")
    return detected


def _journal_check_detection(bench: Bench, good: DeployRequest) -> float | None:
    """Deploy a bad version of `good`'s profile; the seconds after the start at which the
    journal check failed it (its own report), or None when it did not. The rollback
    restarts the good unit; the profile gets the good data back as a new version."""
    profile = good.profile_version.profile
    latest = profile.versions.order_by("-number").first()
    data = {
        **latest.data,
        "spec_method": "suffix",
        "spec_num_tokens": 4,
        "served_model_names": [f"bad-{time.monotonic_ns()}"],
    }
    bad = bench.deploy_version(profile_update(profile=profile, data=data, updated_by=None))
    step = JobStep.objects.get(request=bad, name="journal_check", phase="main")
    reason = step.result.get("reason", "")
    profile_update(profile=profile, data={**latest.data}, updated_by=None)
    if step.status == "failed" and " s after the start)" in reason:
        return float(reason.rsplit("(", 1)[1].split(" s after")[0])
    return None


def _seed_detection(bench: Bench, unit: str, data: dict[str, Any]) -> float:
    """The seed's way with the bad config: start, then /health every 5 s until its budget."""
    testhost, ssh = bench.testhost, bench.ssh
    bad = {**data, "spec_method": "suffix", "spec_num_tokens": 4}
    path = f"/etc/systemd/system/{unit}.service"
    before = testhost.read_file(path)
    testhost.write_file(path, render_unit(bad))
    testhost.systemctl("daemon-reload")
    testhost.systemctl("restart", f"{unit}.service")
    started = time.monotonic()
    port = data["port"]
    while time.monotonic() - started < SEED_BUDGET_S:
        ok = ssh.run(["curl", "-sf", f"http://127.0.0.1:{port}/health"]).exit_code == 0
        if ok:
            break
        ssh.run(["sleep", str(SEED_HEALTH_EVERY_S)], timeout=SEED_HEALTH_EVERY_S + 30)
    detected = time.monotonic() - started
    testhost.write_file(path, before)
    testhost.systemctl("daemon-reload")
    testhost.systemctl("restart", f"{unit}.service")
    return detected


# 3. overhead beyond the service's own stop and load ------------------------------------


def overhead_figure(bench: Bench) -> list[float]:
    """Restarts of a unit with a known model load: the whole job minus the service's own
    stop and load time, against the seed's restart script measured the same way. Returns
    ours."""
    plain = bench.deploy(double_profile(environment={"VLLM_DOUBLE_LOAD_S": str(LOAD_S)}))
    assert plain.status == "succeeded", plain.status_reason
    jobs = [t for t in (_job_total_and_own(bench, plain.unit_name) for _ in range(bench.runs)) if t]
    totals = [total for total, _ in jobs]
    overheads = [total - own for total, own in jobs]
    seed = _values(_seed_overhead(bench, plain) for _ in range(bench.seed_runs))
    bench.testhost.systemctl("stop", f"{plain.unit_name}.service")
    print("\n3. overhead beyond the service's own stop and load time (target < 5 s)")
    print(
        f"   specadmin restart job: median {median(overheads)} ({spread(overheads)}, "
        f"n={len(overheads)}); whole job median {median(totals)}"
    )
    print(f"   seed's restart script: median {median(seed)} (n={len(seed)})")
    return overheads


def _job_total_and_own(bench: Bench, unit_name: str) -> tuple[float, float] | None:
    """One restart job: its whole duration and the service's own part of it (None when
    the job failed or its records lack a moment)."""
    done = bench.restart(unit_name)
    if done.status != "succeeded":
        return None
    own = _service_own_time(bench.ssh, done)
    if own is None:
        return None
    return (done.finished_at - done.started_at).total_seconds(), own


def _seed_overhead(bench: Bench, plain: DeployRequest) -> float | None:
    """The seed's restart script once: its duration minus the service's own stop and load
    read from the journal (None when the journal lacks a moment)."""
    cursor = journal_cursor(bench.ssh)
    started = time.monotonic()
    port = plain.profile_version.data["port"]
    bench.ssh.run(
        ["sh", "-c", SEED_RESTART, "sh", f"{plain.unit_name}.service", str(port)], timeout=300
    )
    total = time.monotonic() - started
    own = _own_from_journal(bench.ssh, f"{plain.unit_name}.service", cursor)
    return None if own is None else total - own


def _own_from_journal(ssh: SSHTransport, unit: str, cursor: str) -> float | None:
    """The service's own stop and load time from its journal after `cursor`: systemd's
    "Stopping …" → "Stopped …", and "Started …"/"Starting" → "Application startup complete"."""
    entries = ssh.journal(unit, since=cursor or None, lines=None)

    def first(match: str) -> float | None:
        for e in entries:
            if match in e.message:
                return e.realtime_usec / 1e6
        return None

    stopping, stopped = first("Stopping "), first("Stopped ")
    starting, ready = first("Starting ") or first("Started "), first("Application startup complete")
    if None in (stopping, stopped, starting, ready):
        return None
    return (stopped - stopping) + (ready - starting)  # type: ignore[operator]


def _service_own_time(ssh: SSHTransport, request: DeployRequest) -> float | None:
    """The service's own part of a restart job: `systemctl stop` as the job recorded it,
    and from the job's `systemctl start` to the server's "Application startup complete"."""
    start = JobStep.objects.get(request=request, name="start", phase="main")
    cursor = start.reads.get("journal_cursor", "")
    stop = JobStep.objects.get(request=request, name="stop", phase="main")
    stop_s = next((r["s"] for r in stop.commands["records"] if r["argv"][3:4] == ["stop"]), None)
    entries = ssh.journal(f"{request.unit_name}.service", since=cursor or None, lines=None)
    started_at = next((r["at"] for r in start.commands["records"] if "start" in r["argv"]), None)
    ready = next(
        (e.realtime_usec / 1e6 for e in entries if "Application startup complete" in e.message),
        None,
    )
    if stop_s is None or started_at is None or ready is None:
        return None
    return stop_s + (ready - started_at)


def _values(measurements: Any) -> list[float]:
    """The measurements that came out (a run that failed gives None and is left out)."""
    return [m for m in measurements if m is not None]
