"""Handing jobs to django-q2: the only place that calls `async_task`.

Callers (the services) call these from `transaction.on_commit`, so a worker never sees a
row that was rolled back (with Redis the queue lives outside the database). The task
functions are named by dotted path, so this module imports nothing of the job runner.
"""

from __future__ import annotations

from django_q.tasks import async_task

DEPLOY_TASK = "deploys.jobs.tasks.deploy_task"
PROBE_TASK = "deploys.jobs.tasks.probe_task"


def enqueue_deploy(request_id: int) -> None:
    """Queue the deploy job of an approved request."""
    async_task(DEPLOY_TASK, request_id, task_name=f"deploy-request-{request_id}", group="deploy")


def enqueue_probe(host_id: int, actor_id: int | None) -> None:
    """Queue a probe of the host."""
    async_task(PROBE_TASK, host_id, actor_id, task_name=f"probe-host-{host_id}", group="probe")


__all__ = ["DEPLOY_TASK", "PROBE_TASK", "enqueue_deploy", "enqueue_probe"]
