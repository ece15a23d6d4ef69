"""django-q2 entry points: thin wrappers that call the runner or a service. No logic here.

The wrappers are what the worker imports by dotted path (`deploys.jobs.queue` and the
housekeeping schedules name them), so they stay stable names when the code behind them
moves; what a job does lives in `deploys.jobs.runner` and `deploys.jobs.steps`.
"""

from __future__ import annotations

from typing import Any

from deploys.jobs import runner
from deploys.services import deploy_requests


def deploy_task(request_id: int) -> str:
    return runner.run_deploy(request_id)


def probe_task(host_id: int, actor_id: int | None) -> dict[str, Any]:
    return runner.run_probe(host_id, actor_id)


def expire_stale_requests_task() -> int:
    """Schedule: expire the pending requests nobody decided on in time."""
    return deploy_requests.expire_stale_requests()


def fail_abandoned_deploys_task() -> int:
    """Schedule: fail the jobs whose worker died."""
    return runner.fail_abandoned_deploys()


__all__ = [
    "deploy_task",
    "expire_stale_requests_task",
    "fail_abandoned_deploys_task",
    "probe_task",
]
