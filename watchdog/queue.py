"""Handing checks to django-q2: the watchdog's only caller of `async_task` (named by
dotted path, as `deploys.jobs.queue` names the deploy tasks)."""

from __future__ import annotations

from django_q.tasks import async_task

CHECK_TASK = "watchdog.tasks.check_task"


def enqueue_check(watch_id: int, token: str) -> None:
    """One task per host, so a slow or unreachable host holds up only its own check.
    `save=False`: a successful check's result is on its watch (`HostWatch.last_check_at`,
    `last_error`, `readings`), not in django-q2's task table, whose pruning (`save_limit`)
    would cost every check a locked read of the kept results and push the deploy jobs'
    results out of it (django_q/monitor.py `save_task`); a failed task is still kept."""
    async_task(
        CHECK_TASK,
        watch_id,
        token,
        task_name=f"watch-{watch_id}",
        group="watchdog",
        save=False,
    )


__all__ = ["CHECK_TASK", "enqueue_check"]
