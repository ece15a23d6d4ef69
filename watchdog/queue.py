"""Handing checks to django-q2: the watchdog's only caller of `async_task` (named by
dotted path, as `deploys.jobs.queue` names the deploy tasks)."""

from __future__ import annotations

from django_q.tasks import async_task

CHECK_TASK = "watchdog.tasks.check_task"


def enqueue_check(watch_id: int, token: str) -> None:
    """One task per host, so a slow or unreachable host holds up only its own check."""
    async_task(CHECK_TASK, watch_id, token, task_name=f"watch-{watch_id}", group="watchdog")


__all__ = ["CHECK_TASK", "enqueue_check"]
