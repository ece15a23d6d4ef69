"""Handing delivery to django-q2. The task is named by dotted path (the allow-list,
deploys.jobs.allowlist, names it the same way), so nothing here imports the worker side."""

from __future__ import annotations

from django_q.tasks import async_task

DELIVER_TASK = "notify.tasks.deliver_notifications_task"


def kick_delivery() -> None:
    """Queue one run of the delivery task (called from `transaction.on_commit`)."""
    async_task(DELIVER_TASK, task_name="notify-deliver", group="notify")


__all__ = ["DELIVER_TASK", "kick_delivery"]
