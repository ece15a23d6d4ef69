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

SERVICE_PORT = 18321  # the same on every host: each has its own loopback

# argv: hosts (JSON), canary, batch size, budget; prints the rollout, users and profile.
FIRST = """
import json, sys, django
django.setup()
from deploys.models import Host
from fleet.services import rollout_approve, rollout_create
from perf.models import BenchPolicy
from tests.deploys.helpers import double_profile, make_host, make_users
from tests.fleet.rollout_support import SERVICE_PORT
from tests.perf.quick_policy import QUICK_BENCH_POLICY
from tests.testhost.host import TestHost
from units.services import profile_create

testhosts = [TestHost.from_json(h) for h in json.loads(sys.argv[1])]
requester, approver = make_users()
hosts = [make_host(t, name=f"fleet-{i + 1}") for i, t in enumerate(testhosts)]
profile = profile_create(data=double_profile(port=SERVICE_PORT), created_by=None)
BenchPolicy.objects.create(profile=profile, **QUICK_BENCH_POLICY)
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

# argv: hosts (JSON). Version 1 of a double profile (its load time left to each host's
# config file) written to every host and started, as specadmin last read it there; then
# version 2 requested and approved to all of them: canary 1, then a batch of 2, budget 0.
SEEDED = """
import json, sys, django
django.setup()
from deploys.running import record_read
from fleet.services import rollout_approve, rollout_create
from hostops.channel.push import sha256_hex
from perf.models import BenchPolicy
from tests.deploys.helpers import UNIT_DIR, double_profile, make_host, make_users
from tests.fleet.rollout_support import SERVICE_PORT
from tests.perf.quick_policy import QUICK_BENCH_POLICY
from tests.testhost.host import TestHost
from units.services import profile_create, profile_update

testhosts = [TestHost.from_json(h) for h in json.loads(sys.argv[1])]
requester, approver = make_users()
hosts = [make_host(t, name=f"fleet-{i + 1}") for i, t in enumerate(testhosts)]
data = double_profile(port=SERVICE_PORT, deploy_journal_check_sec=2,
                      deploy_ready_timeout_sec=150)
del data["environment"]["VLLM_DOUBLE_LOAD_S"]  # each host's config file says
profile = profile_create(data=data, created_by=None)
BenchPolicy.objects.create(profile=profile, **QUICK_BENCH_POLICY)
old = profile.versions.get()
unit = f"{profile.name}.service"
for testhost, host in zip(testhosts, hosts):
    testhost.write_file(f"{UNIT_DIR}/{unit}", old.unit_text)
    testhost.systemctl("daemon-reload", check=True)
    testhost.systemctl("start", unit, check=True)
    record_read(host=host, unit_name=profile.name, data=old.unit_text.encode(), step="probe")
environment = {**data["environment"], "VLLM_DOUBLE_CONFIG_DELAY_S": "0.3"}
new = profile_update(profile=profile, data={**data, "environment": environment},
                     updated_by=None)
rollout = rollout_create(
    profile_version=new, requested_by=requester, hosts=hosts, canary=1, batch_size=2,
    budget_value=0, acknowledge_warnings=True,
)
rollout = rollout_approve(rollout=rollout, approver=approver, comment="go")
print(json.dumps({"rollout": rollout.pk, "users": [requester.pk, approver.pk], "unit": unit,
                  "old": sha256_hex(old.unit_text.encode()),
                  "new": sha256_hex(new.unit_text.encode())}))
"""

# argv: rollout; each host's job steps [phase, name, status], in order.
STEPS = """
import json, sys, django
django.setup()
from deploys.models import JobStep
from fleet.models import RolloutHost
rows = RolloutHost.objects.filter(rollout_id=int(sys.argv[1])).order_by("position")
print(json.dumps([
    {"state": r.state, "steps": [list(s) for s in JobStep.objects.filter(
        request_id=r.request_id).order_by("pk").values_list("phase", "name", "status")]}
    for r in rows
]))
"""

# argv: rollout, user; abort, cancelling the running jobs.
ABORT = """
import json, sys, django
django.setup()
from django.contrib.auth import get_user_model
from fleet.models import Rollout
from fleet.services import rollout_abort
r = rollout_abort(rollout=Rollout.objects.get(pk=int(sys.argv[1])),
                  user=get_user_model().objects.get(pk=int(sys.argv[2])), cancel_running=True)
print(json.dumps(r.status))
"""

# argv: rollout; its story (the audit events of the rollout and of its hosts' requests),
# each request's starts, and the rollout page as its requester sees it.
STORY = """
import json, sys, django
django.setup()
from django.test import Client
from django.urls import reverse
from audit.models import AuditEvent
from fleet.models import Rollout
r = Rollout.objects.get(pk=int(sys.argv[1]))
requests = [str(pk) for pk in r.hosts.values_list("request_id", flat=True)]
events = AuditEvent.objects.filter(object_type="fleet.rollout", object_id=str(r.pk))
starts = {pk: AuditEvent.objects.filter(object_type="deploys.deployrequest", object_id=pk,
                                        kind="deploy.started").count() for pk in requests}
client = Client(HTTP_HOST="localhost")
client.force_login(r.requested_by)
page = client.get(reverse("fleet:rollout_detail", args=[r.pk]))
print(json.dumps({
    "kinds": list(events.order_by("id").values_list("kind", flat=True)),
    "starts": starts, "status": page.status_code, "html": page.content.decode(),
}))
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
    """The host's vLLM double serves `tokens_per_s` per stream from its next start."""
    set_double(host, tokens_per_s=tokens_per_s)


def set_double(host: TestHost, **knobs: float) -> None:
    """The host's vLLM double takes `knobs` from its next start (its config file's "vllm"
    section: tests/doubles/vllm_double_config.py); None removes a knob."""
    path = "/etc/gpu-double/config.json"
    config = json.loads(host.read_file(path))
    section = config.setdefault("vllm", {})
    for name, value in knobs.items():
        if value is None:
            section.pop(name, None)
        else:
            section[name] = value
    host.write_file(path, json.dumps(config))


def job_at(env: dict[str, str], rollout: int, position: int, step: str) -> bool:
    """The host at `position` runs `step` of its job now (main phase)."""
    rows = python(env, STEPS, str(rollout))
    return ["main", step, "running"] in rows[position]["steps"]


__all__ = [
    "ABORT",
    "FIRST",
    "NEXT",
    "SEEDED",
    "SERVICE_PORT",
    "STATE",
    "STEPS",
    "STORY",
    "job_at",
    "set_double",
    "slow_down",
    "wait_ended",
]
