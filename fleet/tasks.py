"""django-q2 entry points of rollouts: thin wrappers, stable dotted names (on the worker's
allow-list through `fleet.apps`). What they do is `fleet.coordinator`."""

from __future__ import annotations

from fleet import coordinator


def advance_rollout_task(rollout_id: int) -> str:
    return coordinator.advance(rollout_id)


def check_rollouts_task() -> int:
    """Schedule: advance every rollout that is not finished (pauses that ended, a
    coordinator task that was lost)."""
    return coordinator.check_rollouts()


__all__ = ["advance_rollout_task", "check_rollouts_task"]
