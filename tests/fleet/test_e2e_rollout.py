"""Rollouts on three real test hosts (systemd + sshd, the vLLM double) through real
`qcluster` workers on PostgreSQL + Redis: canary 1, then a batch of 2 in parallel.

1. a clean rollout: every host deployed, each one's first benchmark its baseline;
2. the next version, with the canary's vLLM double made slower on that host (its own
   knob): the canary's gate says regressed, its job rolls back, the rollout halts before
   any other host, which keeps the first version running;
3. the next version with that slow host last and a failure budget of 1: its regression
   is within the budget, the rollout succeeds, that host rolled back; `verifyaudit` passes.
"""

from __future__ import annotations

import hashlib
import html as markup
import json
import os
import signal
import subprocess
from collections.abc import Callable, Iterator

import pytest

from tests.deploys.conftest import (  # noqa: F401 (fixtures)
    postgres_redis,
    sqlite_orm,
    start_clusters,
)
from tests.deploys.helpers import UNIT_DIR
from tests.deploys.qcluster_support import Setup, manage, python
from tests.deploys.test_qcluster_trial import HOUSEKEEPING, wait_until, worker_connected_to
from tests.fleet.rollout_support import (
    ABORT,
    FIRST,
    NEXT,
    SEEDED,
    STATE,
    STORY,
    job_at,
    set_double,
    slow_down,
    wait_ended,
)
from tests.testhost.host import TestHost, boot_hosts
from tests.testhost.pytest_plugin import unavailable_reason

pytestmark = [pytest.mark.qcluster, pytest.mark.testhost]


@pytest.fixture(scope="module")
def fleet_hosts() -> Iterator[list[TestHost]]:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    hosts = boot_hosts(3, gpu_count=8, own_network=True, name_prefix="fleet")
    try:
        yield hosts
    finally:
        for host in hosts:
            host.stop()


def test_a_clean_rollout_then_a_canary_regression_halts_before_the_other_hosts(
    postgres_redis: Setup,  # noqa: F811 (fixture)
    fleet_hosts: list[TestHost],
    start_clusters: Callable[[Setup, int], list[subprocess.Popen]],  # noqa: F811 (fixture)
) -> None:
    env = postgres_redis.env = {**postgres_redis.env, "Q_WORKERS": "3"}
    [cluster] = start_clusters(postgres_redis, 1)
    made = python(env, FIRST, json.dumps([h.to_json() for h in fleet_hosts]), "1", "2", "0")
    first = wait_ended(env, made["rollout"])
    assert first["status"] == "succeeded", [(h["host"], h["reason"]) for h in first["hosts"]]
    assert [h["state"] for h in first["hosts"]] == ["succeeded"] * 3
    canary, *batch = first["hosts"]
    # the batch ran in parallel, after the canary ended
    assert all(h["job_started"] >= canary["job_finished"] for h in batch)
    assert max(h["job_started"] for h in batch) < min(h["job_finished"] for h in batch)
    unit = fleet_hosts[0].read_file(f"{UNIT_DIR}/{first['unit']}")
    assert unit == canary["unit_text"]

    slow_down(fleet_hosts[0], 30)
    users = [str(u) for u in made["users"]]
    second = python(
        env, NEXT, str(made["profile"]), *users, json.dumps(made["hosts"]), "1", "2", "0"
    )
    halted = wait_ended(env, second["rollout"])
    assert halted["status"] == "halted", halted
    assert halted["reason"] == "the canary failed on 1 host(s)"
    assert [h["state"] for h in halted["hosts"]] == ["regressed", "not_reached", "not_reached"]
    assert halted["hosts"][0]["status"] == "rolled_back", halted["hosts"][0]["reason"]
    assert "slower than baseline run" in halted["hosts"][0]["reason"]
    assert [h["status"] for h in halted["hosts"][1:]] == ["cancelled", "cancelled"]
    # every host runs the first version: the canary put back, the others never touched
    for host, row in zip(fleet_hosts, first["hosts"], strict=True):
        assert host.read_file(f"{UNIT_DIR}/{first['unit']}") == row["unit_text"]

    # 3. the slow host last, with a budget of 1: its regression is within the budget, the
    #    rollout goes on and succeeds; that host is rolled back, the others run v3
    order = [made["hosts"][1], made["hosts"][2], made["hosts"][0]]
    third = python(env, NEXT, str(made["profile"]), *users, json.dumps(order), "1", "2", "1")
    done = wait_ended(env, third["rollout"])
    assert done["status"] == "succeeded", done
    assert [h["state"] for h in done["hosts"]] == ["succeeded", "succeeded", "regressed"]
    assert done["hosts"][2]["status"] == "rolled_back"
    assert "1 failed, budget 1" in done["reason"]
    for host, row in zip(fleet_hosts[1:], done["hosts"][:2], strict=True):
        assert host.read_file(f"{UNIT_DIR}/{first['unit']}") == row["unit_text"]
    assert fleet_hosts[0].read_file(f"{UNIT_DIR}/{first['unit']}") == canary["unit_text"]
    assert cluster.poll() is None
    assert manage(env, "verifyaudit", "--skip-checks").startswith("OK: ")


# The third host's double loads for minutes: its job sits in readiness while the others end.
SLOW_LOAD = 300


@pytest.fixture
def quiet_hosts(fleet_hosts: list[TestHost]) -> Iterator[list[TestHost]]:
    """The module's hosts with no vllm-* service running (the same port on each) and the
    doubles' default load time, before and after the test."""

    def quiet() -> None:
        for host in fleet_hosts:
            host.nsenter(["sh", "-c", "systemctl stop 'vllm-*' 2>/dev/null; true"])
            set_double(host, load_s=None)

    quiet()
    yield fleet_hosts
    quiet()


def sha_on(host: TestHost, unit: str) -> str:
    return hashlib.sha256(host.read_file(f"{UNIT_DIR}/{unit}").encode()).hexdigest()


def start_mid_batch(env: dict[str, str], hosts: list[TestHost]) -> dict[str, object]:
    """Version 1 on every host, version 2 rolled out; returns once the canary and the
    batch's first host are deployed and the third host's job waits in its readiness."""
    made: dict[str, object] = python(env, SEEDED, json.dumps([h.to_json() for h in hosts]))
    set_double(hosts[2], load_s=SLOW_LOAD)
    rollout = int(str(made["rollout"]))
    wait_until(lambda: job_at(env, rollout, 2, "readiness"), 120, "host 3 in readiness")
    wait_until(
        lambda: python(env, STATE, str(rollout))["hosts"][1]["state"] == "succeeded",
        60,
        "host 2 deployed",
    )
    return made


def one_story(env: dict[str, str], rollout: int) -> dict[str, object]:
    story: dict[str, object] = python(env, STORY, str(rollout))
    kinds = story["kinds"]
    assert isinstance(kinds, list)
    assert kinds[:2] == ["rollout.requested", "rollout.approved"], kinds
    assert kinds.count("rollout.host_started") == 3, kinds
    assert kinds.count("rollout.host_ended") == 3, kinds
    assert story["starts"] == dict.fromkeys(story["starts"], 1), "no host deployed twice"
    assert story["status"] == 200
    return story


def test_an_abort_mid_batch_leaves_every_host_on_its_old_or_its_new_version(
    sqlite_orm: Setup,  # noqa: F811 (fixture)
    quiet_hosts: list[TestHost],
    start_clusters: Callable[[Setup, int], list[subprocess.Popen]],  # noqa: F811 (fixture)
) -> None:
    env = sqlite_orm.env = {**sqlite_orm.env, "Q_WORKERS": "3", "DEPLOY_LOCK_WAIT_S": "60"}
    [cluster] = start_clusters(sqlite_orm, 1)
    made = start_mid_batch(env, quiet_hosts)
    rollout, unit = str(made["rollout"]), str(made["unit"])
    set_double(quiet_hosts[2], load_s=None)  # the text put back starts at once
    assert python(env, ABORT, rollout, str(made["users"][0])) == "aborted"  # type: ignore[index]
    ended = wait_ended(env, int(rollout), timeout=120)

    assert ended["status"] == "aborted", ended
    assert "running jobs cancelled" in ended["reason"]
    assert [h["state"] for h in ended["hosts"]] == ["succeeded", "succeeded", "cancelled"]
    assert "during readiness" in ended["hosts"][2]["reason"], ended["hosts"][2]["reason"]
    # read on the hosts: two fully on version 2, the third back on version 1, all running
    assert [sha_on(h, unit) for h in quiet_hosts] == [made["new"], made["new"], made["old"]]
    assert [h.systemctl("is-active", unit).stdout.strip() for h in quiet_hosts] == ["active"] * 3
    leftovers = quiet_hosts[2].nsenter(["ls", "-A", UNIT_DIR]).stdout.split()
    assert not [n for n in leftovers if ".specadmin-" in n and "prev" not in n], leftovers
    kinds = one_story(env, int(rollout))["kinds"]
    assert kinds.index("rollout.aborted") < len(kinds) - 1, "host 3's end comes after"  # type: ignore[union-attr]
    assert cluster.poll() is None
    assert manage(env, "verifyaudit", "--skip-checks").startswith("OK: ")


def test_a_worker_killed_mid_batch_leaves_the_rollout_interrupted_saying_what_runs_where(
    postgres_redis: Setup,  # noqa: F811 (fixture)
    quiet_hosts: list[TestHost],
    start_clusters: Callable[[Setup, int], list[subprocess.Popen]],  # noqa: F811 (fixture)
) -> None:
    env = postgres_redis.env = {
        **postgres_redis.env,
        "Q_WORKERS": "3",
        "DEPLOY_LOCK_WAIT_S": "60",
        "DEPLOY_LOCK_LEASE_S": "4",
    }
    [cluster] = start_clusters(postgres_redis, 1)
    made = start_mid_batch(env, quiet_hosts)
    rollout, unit = str(made["rollout"]), str(made["unit"])
    worker = wait_until(
        lambda: worker_connected_to(cluster, quiet_hosts[2].port), 10, "host 3's worker"
    )
    os.kill(worker, signal.SIGKILL)  # no `finally` runs; the cluster starts a new worker
    wait_until(
        lambda: (
            python(env, HOUSEKEEPING) and python(env, STATE, rollout)["status"] == "interrupted"
        ),
        60,
        "the rollout to be interrupted",
    )
    ended = wait_ended(env, int(rollout), timeout=60)

    assert [h["state"] for h in ended["hosts"]] == ["succeeded", "succeeded", "interrupted"]
    assert "in progress: readiness" in ended["hosts"][2]["reason"]
    assert [sha_on(h, unit) for h in quiet_hosts] == [made["new"]] * 3
    story = one_story(env, int(rollout))
    assert "rollout.interrupted" in story["kinds"]  # type: ignore[operator]
    html = str(story["html"])
    for row in ended["hosts"][:2]:
        assert row["host_state"].endswith("its file is the requested unit"), row
        assert row["host_state"] in html
    # the interrupted host: what its steps left, which is what the host has
    assert ended["hosts"][2]["host_state"] == (
        f"{unit} on fleet-3: its file is the requested unit; started by this job and not "
        "stopped since (from the job's steps, not read on the host)"
    )
    assert markup.escape(ended["hosts"][2]["host_state"]) in html
    assert quiet_hosts[2].systemctl("is-active", unit).stdout.strip() == "active"
    assert cluster.poll() is None
    assert manage(env, "verifyaudit", "--skip-checks").startswith("OK: ")
