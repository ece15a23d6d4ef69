"""django-q2 entry points of the watchdog: thin wrappers, on the worker's allow-list
(registered by `watchdog.apps`); the schedule (migration watchdog 0002) names the first."""

from __future__ import annotations

from watchdog import dispatch, runner


def dispatch_task() -> int:
    """Schedule, every minute: claim due hosts and enqueue their checks for a minute."""
    return dispatch.run_dispatcher()


def check_task(watch_id: int, token: str) -> str:
    return runner.run_check_soon(watch_id, token)


__all__ = ["check_task", "dispatch_task"]
