"""django-q2 entry points: enqueue, and thin wrappers that call the runner. No logic here.

The wrappers are what the worker imports by dotted path, so they stay stable names; what
a job does lives in `deploys.jobs.runner` and `deploys.jobs.steps`.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django_q.tasks import async_task

from deploys.jobs import runner


def enqueue_deploy(request_id: int) -> None:
    """Queue the deploy job once the caller's transaction commits (a worker must never see
    an approval that is rolled back; with Redis the queue is outside the database)."""
    transaction.on_commit(
        lambda: async_task(
            "deploys.jobs.tasks.deploy_task",
            request_id,
            task_name=f"deploy-request-{request_id}",
            group="deploy",
        )
    )


def enqueue_probe(host_id: int, actor_id: int | None) -> None:
    """Queue a probe of the host (after commit, as above)."""
    transaction.on_commit(
        lambda: async_task(
            "deploys.jobs.tasks.probe_task",
            host_id,
            actor_id,
            task_name=f"probe-host-{host_id}",
            group="probe",
        )
    )


def deploy_task(request_id: int) -> str:
    return runner.run_deploy(request_id)


def probe_task(host_id: int, actor_id: int | None) -> dict[str, Any]:
    return runner.run_probe(host_id, actor_id)


__all__ = ["deploy_task", "enqueue_deploy", "enqueue_probe", "probe_task"]
