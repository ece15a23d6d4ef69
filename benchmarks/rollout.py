"""Rollout benchmark: one version to 6 test hosts, canary 1 then batches of 3, through 3
real `qcluster` workers on PostgreSQL + Redis (docs/rollouts.md, "How fast").

Run (as root, like the test hosts; PostgreSQL at 127.0.0.1:5432 with trust auth and
Redis at 127.0.0.1:6379, e.g. under scripts/with-test-services.sh):
`.venv/bin/python benchmarks/rollout.py [--hosts 6] [--batch 3] [--workers 3]`.

Each host is a systemd + sshd test host in a network namespace of its own (the same unit
text serves the same port on each, as on a fleet), running the vLLM double; each host's
job is the whole deploy pipeline with its benchmark (the first measurement on a host
becomes its baseline). Prints the canary's time, each batch's (first job's start to last
job's end), the whole rollout's (approval to the last job's end), each host's job time,
and how the whole compares with "canary + batches × one host's job" and with "hosts × one
host's job" (what one request after the other would take). The last line is
`RESULT rollout/one-host-job: X.XX` (seconds, the median of the hosts' jobs). Figures
taken on a shared or busy machine are noisy: say so when you report them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.clusters import stop_cluster  # noqa: E402  (after the path insert)
from tests.deploys.qcluster_support import (  # noqa: E402
    PG_ADMIN_URL,
    REDIS_BASE_URL,
    base_env,
    claim_redis_db,
    manage,
    python,
)
from tests.fleet.rollout_support import FIRST, wait_ended  # noqa: E402
from tests.testhost.host import boot_hosts  # noqa: E402


def _cluster(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "w") as out:
        return subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _report(state: dict, approved_at: float) -> float:
    hosts = state["hosts"]
    jobs = [h["job_finished"] - h["job_started"] for h in hosts]
    for h, s in zip(hosts, jobs, strict=True):
        print(f"  {h['host']:<10} batch {h['batch']}  job {s:6.2f} s  {h['state']}")
    batches = sorted({h["batch"] for h in hosts})
    spans = []
    for b in batches:
        mine = [h for h in hosts if h["batch"] == b]
        span = max(h["job_finished"] for h in mine) - min(h["job_started"] for h in mine)
        spans.append(span)
        label = "canary" if b == 0 else f"batch {b} ({len(mine)} hosts)"
        print(f"{label:<20} {span:6.2f} s")
    total = max(h["job_finished"] for h in hosts) - approved_at
    one = statistics.median(jobs)
    after = len(batches) - 1
    print(f"rollout, approval to last job's end: {total:6.2f} s")
    print(
        f"canary + {after} × one host's job = {one * (1 + after):6.2f} s;  "
        f"{len(hosts)} × one host's job = {one * len(hosts):6.2f} s"
    )
    print(f"gaps (coordinator, queue, pick-up): {total - sum(spans):6.2f} s over {after} batches")
    return one


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hosts", type=int, default=6)
    p.add_argument("--batch", type=int, default=3)
    p.add_argument("--workers", type=int, default=3)
    args = p.parse_args()
    name = f"specadmin_rollout_{secrets.token_hex(4)}"
    # A Redis database no test or other run uses, held until the end
    # (tests/deploys/qcluster_support.py).
    redis_db, lock = claim_redis_db()
    queue = redis.Redis.from_url(f"{REDIS_BASE_URL}/{redis_db}")
    queue.flushdb()
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    work = Path(tempfile.mkdtemp(prefix="specadmin-rollout-bench-"))
    env = {
        **base_env(),
        "DATABASE_URL": PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}",
        "REDIS_URL": f"{REDIS_BASE_URL}/{redis_db}",
        "AUDIT_CHECKPOINT_FILE": str(work / "checkpoints.jsonl"),
        "AUDIT_WITNESS_FILE": str(work / "witness.jsonl"),
        "Q_WORKERS": str(args.workers),
    }
    hosts = []
    cluster = None
    try:
        manage(env, "migrate", "--noinput", "-v0", "--skip-checks")
        started = time.monotonic()
        hosts = boot_hosts(args.hosts, gpu_count=8, own_network=True, name_prefix="bench")
        print(f"{args.hosts} test hosts booted in {time.monotonic() - started:.1f} s")
        cluster = _cluster(env, work / "qcluster.log")
        time.sleep(3)  # the cluster's workers start
        testhosts = json.dumps([h.to_json() for h in hosts])
        made = python(env, FIRST, testhosts, "1", str(args.batch), "0")
        state = wait_ended(env, made["rollout"], timeout=1200)
        print(f"rollout #{made['rollout']}: {state['status']} ({state['reason']})")
        one = _report(state, state["started"])  # from the approval
        print(f"RESULT rollout/one-host-job: {one:.2f}")
        return 0 if state["status"] == "succeeded" else 1
    finally:
        if cluster is not None:
            stop_cluster(cluster)
        for host in hosts:
            with contextlib.suppress(Exception):
                host.stop()
        queue.flushdb()
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        lock.close()


if __name__ == "__main__":
    raise SystemExit(main())
