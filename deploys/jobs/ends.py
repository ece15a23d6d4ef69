"""Who is told that a deploy job ended: listeners registered by apps above `deploys`.

A rollout (`fleet`) advances when one of its hosts' jobs ends; `deploys` must not import
`fleet` (docs/architecture.md, "Apps and imports"), so `fleet` registers a listener here
when Django loads it, as `perf` registers the benchmark step (`deploys.jobs.benchmark`).
The runner calls `job_ended` after the request's final status is committed (a final
status, an interruption, a queued job cancelled); a listener's failure is logged and
never changes how the job ended. Listeners run in the worker that ran the job: they
should only hand work on (queue a task), not do it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction

log = logging.getLogger(__name__)

Listener = Callable[[int], None]
_listeners: list[Listener] = []


def register(listener: Listener) -> None:
    """Call `listener(request_id)` whenever a deploy job ends (once per listener)."""
    if listener not in _listeners:
        _listeners.append(listener)


def unregister(listener: Listener) -> None:
    if listener in _listeners:
        _listeners.remove(listener)


def _tell(request_id: int) -> None:
    for listener in list(_listeners):
        try:
            listener(request_id)
        except Exception:
            log.exception("a listener of deploy request #%s's end failed", request_id)


def job_ended(request_id: int) -> None:
    """Tell the listeners once the current transaction commits (at once outside one)."""
    transaction.on_commit(lambda: _tell(request_id))


__all__ = ["job_ended", "register", "unregister"]
