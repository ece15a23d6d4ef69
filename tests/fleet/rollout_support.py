"""Rollouts through real `qcluster` workers on test hosts of their own network (each its
own loopback, so one unit text serves the same port on every host, as on a fleet): the
scripts run in subprocesses against the setup's database (tests/deploys/qcluster_support),
shared by tests/fleet/test_e2e_rollout.py and benchmarks/rollout.py."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.deploys.qcluster_support import python
from tests.testhost.host import TestHost

# Quick measurements: 4 requests × 32 tokens at concurrency 1, twice.
POLICY = {"concurrency": [1], "num_requests": 4, "max_tokens": 32, "repeats": 2, "prompts": "chat"}
SERVICE_PORT = 18321  # the same on every host: each has its own loopback

# argv: hosts (JSON), canary, batch size, budget; prints the rollout, users and profile.
FIRST = """
import json, sys, django
django.setup()
from deploys.models import Host
from fleet.services import rollout_approve, rollout_create
from perf.models import BenchPolicy
from tests.deploys.helpers import double_profile, make_host, make_users
from tests.fleet.rollout_support import POLICY, SERVICE_PORT
from tests.testhost.host import TestHost
from units.services import profile_create

testhosts = [TestHost.from_json(h) for h in json.loads(sys.argv[1])]
requester, approver = make_users()
hosts = [make_host(t, name=f"fleet-{i + 1}") for i, t in enumerate(testhosts)]
profile = profile_create(data=double_profile(port=SERVICE_PORT), created_by=None)
BenchPolicy.objects.create(profile=profile, **POLICY)
rollout = rollout_create(
    profile_version=profile.versions.get(), requested_by=requester, hosts=hosts,
    canary=int(sys.argv[2]), batch_size=int(sys.argv[3]), budget_value=int(sys.argv[4]),
    acknowledge_warnings=True,
)
rollout = rollout_approve(rollout=rollout, approver=approver, comment="go")
print(json.dumps({"rollout": rollout.pk, "users": [requester.pk, approver.pk],
                  "profile": profile.pk, "hosts": [h.pk for h in hosts]}))
"""

# argv: profile, requester, approver, hosts (JSON ids), canary, batch size, budget; a new
# version of the profile rolled out to the same hosts.
NEXT = """
import json, sys, django
django.setup()
from django.contrib.auth import get_user_model
from deploys.models import Host
from fleet.services import rollout_approve, rollout_create
from units.models import ServiceProfile
from units.services import profile_update

users = get_user_model().objects
profile = ServiceProfile.objects.get(pk=int(sys.argv[1]))
latest = profile.versions.order_by("-number").first()
delay = f"{0.2 + 0.1 * latest.number:.1f}"  # a new version each time
environment = {**latest.data["environment"], "VLLM_DOUBLE_CONFIG_DELAY_S": delay}
data = {**latest.data, "environment": environment}
version = profile_update(profile=profile, data=data, updated_by=None)
ids = json.loads(sys.argv[4])
hosts = sorted(Host.objects.filter(pk__in=ids), key=lambda h: ids.index(h.pk))
rollout = rollout_create(
    profile_version=version, requested_by=users.get(pk=int(sys.argv[2])), hosts=hosts,
    canary=int(sys.argv[5]), batch_size=int(sys.argv[6]), budget_value=int(sys.argv[7]),
    acknowledge_warnings=True,
)
rollout = rollout_approve(rollout=rollout, approver=users.get(pk=int(sys.argv[3])))
print(json.dumps({"rollout": rollout.pk}))
"""

STATE = """
import json, sys, django
django.setup()
from fleet.models import Rollout
r = Rollout.objects.get(pk=int(sys.argv[1]))
rows = []
for h in r.hosts.select_related("host", "request").order_by("position"):
    q = h.request
    rows.append({
        "host": h.host.name, "batch": h.batch, "state": h.state,
        "started": h.started_at.timestamp() if h.started_at else None,
        "finished": h.finished_at.timestamp() if h.finished_at else None,
        "job_started": q.started_at.timestamp() if q and q.started_at else None,
        "job_finished": q.finished_at.timestamp() if q and q.finished_at else None,
        "request": q.pk if q else None, "status": q.status if q else "",
        "reason": q.status_reason if q else "", "host_state": q.host_state if q else "",
        "unit_text": q.unit_text if q else "",
    })
print(json.dumps({"status": r.status, "reason": r.status_reason, "hosts": rows,
                  "unit": f"{r.unit_name}.service",
                  "started": r.started_at.timestamp() if r.started_at else None}))
"""


def wait_ended(env: dict[str, str], rollout: int, timeout: float = 600) -> dict[str, Any]:
    """The rollout's state once it ended and none of its hosts' jobs still runs."""
    deadline = time.monotonic() + timeout
    while True:
        state = python(env, STATE, str(rollout))
        running = any(h["state"] == "started" for h in state["hosts"])
        if state["status"] not in ("running", "paused") and not running:
            return state
        assert time.monotonic() < deadline, f"rollout #{rollout} still {state}"
        time.sleep(1)


def slow_down(host: TestHost, tokens_per_s: float) -> None:
    """The host's vLLM double serves `tokens_per_s` per stream from its next start (its
    config file's knob: tests/doubles/vllm_double_config.py)."""
    path = "/etc/gpu-double/config.json"
    config = json.loads(host.read_file(path))
    config.setdefault("vllm", {})["tokens_per_s"] = tokens_per_s
    host.write_file(path, json.dumps(config))


__all__ = ["FIRST", "NEXT", "POLICY", "SERVICE_PORT", "STATE", "slow_down", "wait_ended"]
