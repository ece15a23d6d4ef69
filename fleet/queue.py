"""Handing the coordinator to django-q2 (fleet's only call of `async_task`).

Called from `transaction.on_commit`, so a worker never sees a row that was rolled back.
The task is named by dotted path and is on the worker's allow-list
(`deploys.jobs.allowlist.register_tasks`, from `fleet.apps`).
"""

from __future__ import annotations

from django_q.tasks import async_task

ADVANCE_TASK = "fleet.tasks.advance_rollout_task"
CHECK_TASK = "fleet.tasks.check_rollouts_task"


def enqueue_advance(rollout_id: int) -> None:
    """Queue one look at the rollout: record ended jobs, start the next batch or halt."""
    async_task(ADVANCE_TASK, rollout_id, task_name=f"rollout-{rollout_id}", group="rollout")


__all__ = ["ADVANCE_TASK", "CHECK_TASK", "enqueue_advance"]
