"""The watchdog soak's figures (benchmarks/watchdog_soak.py sets up Django and the test
host, then calls `run`)."""

from __future__ import annotations

import statistics
import subprocess
import time
from typing import Any

from deploys.jobs import queue as deploy_queue
from deploys.jobs import runner as deploy_runner
from perf.models import BenchPolicy
from tests.deploys.helpers import approved_request, double_profile, make_host, make_users
from tests.testhost.host import TestHost
from watchdog import claims, runner
from watchdog import queue as watch_queue
from watchdog.models import HostWatch, Incident
from watchdog.targets import watched_targets

NGRAM = {"spec_method": "ngram", "spec_num_tokens": 5, "spec_prompt_lookup_max": 4}
POLICY = {
    "concurrency": [1],
    "num_requests": 4,
    "max_tokens": 64,
    "repeats": 1,
    "prompts": "chat",
    "noisy_budget_s": 0,
}
# Live traffic on the host itself: two clients streaming completions back to back.
LOAD = """
import json, sys, threading, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}/v1/completions"
body = json.dumps({"model": "double", "prompt": "Explain speculative decoding.",
                   "max_tokens": 128, "stream": True}).encode()
def client():
    while True:
        req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                for _ in r:
                    pass
        except OSError:
            pass
for _ in range(2):
    threading.Thread(target=client, daemon=True).start()
threading.Event().wait()
"""


def _reading(now: dict[str, Any]) -> str:
    [unit] = now["units"]
    state = (unit.get("state") or {}).get("active", "?")
    drift = "same text" if unit["sha256"] == unit["approved_sha256"] else "DRIFT"
    return (
        f"{state}, {drift}, running {unit['running']}, waiting {unit['waiting']}, "
        f"{unit['tok_s']} tok/s"
    )


def run(testhost: TestHost, *, minutes: float, period_s: float) -> int:
    deploy_queue.async_task = lambda *a, **k: None  # the soak runs the deploy job itself
    queued: list[tuple[Any, ...]] = []
    watch_queue.async_task = lambda *a, **k: queued.append(a)  # and every check
    site = make_host(testhost, name="soak")
    data = double_profile(**NGRAM)
    request = approved_request(site, *make_users(), data=data)
    BenchPolicy.objects.filter(profile=request.profile_version.profile).update(**POLICY)
    outcome = deploy_runner.run_deploy(request.pk)
    request.refresh_from_db()
    if outcome != "succeeded":
        print(f"the deploy did not succeed: {request.status_reason}")
        return 1
    for _, watch_id, token in queued:  # the check the job's end asked for
        runner.run_check(watch_id, token)
    port = int(data["port"])
    [target] = watched_targets(site)
    recorded = target.expected_acceptance
    print(f"acceptance its benchmark recorded: {recorded:.1f}%" if recorded else "no acceptance")
    print(
        f"watchdog soak: test host {testhost.name}, 8-GPU double, {request.unit_name} "
        f"(n-gram k=5) deployed; {minutes:g} min at a {period_s:g} s period; two clients "
        "on the host; shared machine: figures are noisy"
    )
    load = subprocess.Popen(
        [
            "nsenter",
            "-t",
            str(testhost.container_pid()),
            "-a",
            "--",
            "python3",
            "-c",
            LOAD,
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    seconds: list[float] = []
    acceptance: list[float] = []
    try:
        end = time.monotonic() + minutes * 60
        next_at = time.monotonic()
        while time.monotonic() < end:
            time.sleep(max(0.0, next_at - time.monotonic()))
            next_at += period_s
            token, watch_id = claims.claim_host(site.pk)
            if watch_id is None:
                print("  the host could not be claimed")
                continue
            said = runner.run_check(watch_id, token)
            watch = HostWatch.objects.get(pk=watch_id)
            now = watch.readings.get("now", {})
            seconds.append(float(now.get("seconds", 0.0)))
            rate = _live_acceptance(watch.readings)
            if rate is not None:
                acceptance.append(rate)
            opened = Incident.objects.filter(host=site).count()
            print(f"  check {len(seconds):3d}: {said}; {_reading(now)}; incidents {opened}")
    finally:
        load.kill()
        load.wait(10)
    incidents = list(Incident.objects.filter(host=site))
    for incident in incidents:
        print(f"  incident {incident.key}: {incident.summary}")
    median = statistics.median(seconds) if seconds else 0.0
    live = f"{statistics.mean(acceptance) * 100:.1f}%" if acceptance else "n/a"
    print(
        f"checks {len(seconds)}, check time median {median:.3f} s, max "
        f"{max(seconds, default=0):.3f} s; live acceptance mean {live}"
    )
    print(
        f"RESULT watchdog soak {minutes:g} min, {len(seconds)} checks of a busy healthy host: "
        f"{len(incidents)} incidents"
    )
    return 0 if not incidents else 1


def _live_acceptance(readings: dict[str, Any]) -> float | None:
    """The acceptance rate of the last two /metrics samples (accepted / draft tokens)."""
    units = readings.get("history", {}).get("units", {})
    for entry in units.values():
        samples = entry.get("samples", [])
        if len(samples) >= 2:
            a, b = samples[-2], samples[-1]
            drafts = (b.get("draft_tokens") or 0) - (a.get("draft_tokens") or 0)
            if drafts > 0:
                return ((b.get("accepted") or 0) - (a.get("accepted") or 0)) / drafts
    return None
