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

import json
import subprocess
from collections.abc import Callable, Iterator

import pytest
import redis

from tests.deploys.conftest import postgres_redis, start_clusters  # noqa: F401 (fixtures)
from tests.deploys.helpers import UNIT_DIR
from tests.deploys.qcluster_support import REDIS_BASE_URL, Setup, manage, python
from tests.fleet.rollout_support import FIRST, NEXT, slow_down, wait_ended
from tests.testhost.host import TestHost, boot_hosts
from tests.testhost.pytest_plugin import unavailable_reason

pytestmark = [pytest.mark.qcluster, pytest.mark.testhost]
FLEET_REDIS_DB = 13


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
    # A Redis database of its own: a cluster some other run left on the qcluster tests'
    # database would take this test's tasks off the shared list.
    queue = redis.Redis.from_url(f"{REDIS_BASE_URL}/{FLEET_REDIS_DB}")
    queue.flushdb()
    env = {
        **postgres_redis.env,
        "Q_WORKERS": "3",
        "REDIS_URL": f"{REDIS_BASE_URL}/{FLEET_REDIS_DB}",
    }
    postgres_redis.env = env
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
