"""django-q2 entry point (a thin wrapper, named by dotted path in notify.queue, the
schedule of migration notify 0002 and the allow-list, deploys.jobs.allowlist)."""

from __future__ import annotations

from notify import delivery


def deliver_notifications_task() -> int:
    """Queued after each commit that wrote notifications, and every minute (retries)."""
    return delivery.deliver_due()


__all__ = ["deliver_notifications_task"]
