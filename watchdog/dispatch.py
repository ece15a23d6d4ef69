"""Handing due hosts to workers, one check task each.

django-q2's scheduler fires a schedule at most once a minute (its sentinel calls it every
30 s, and `minutes` is the finest period: django_q/cluster.py, django_q/scheduler.py), but a
host is due every 30 s by default. So the scheduled dispatcher claims and enqueues for
`WATCHDOG_DISPATCH_S` (55 s) every `WATCHDOG_TICK_S` (5 s), then returns: one worker
slot is the dispatcher's for that minute, the other workers run the checks.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import transaction

from watchdog import claims, queue

log = logging.getLogger(__name__)

DEFAULT_DISPATCH_S = 55.0
DEFAULT_TICK_S = 5.0


def enabled() -> bool:
    return bool(getattr(settings, "WATCHDOG_ENABLED", True))


def dispatch_once(*, enqueue: Callable[[int, str], None] = queue.enqueue_check) -> int:
    """Claim the due hosts and enqueue a check for each; how many."""
    token, ids = claims.claim_due()
    for watch_id in ids:
        enqueue(watch_id, token)
    return len(ids)


def run_dispatcher(
    *,
    seconds: float | None = None,
    tick: float | None = None,
    enqueue: Callable[[int, str], None] = queue.enqueue_check,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """The scheduled task: new hosts get a watch, then dispatch every tick for `seconds`.
    Nothing with WATCHDOG_ENABLED off."""
    if not enabled():
        return 0
    seconds = (
        float(getattr(settings, "WATCHDOG_DISPATCH_S", DEFAULT_DISPATCH_S))
        if seconds is None
        else seconds
    )
    tick = float(getattr(settings, "WATCHDOG_TICK_S", DEFAULT_TICK_S)) if tick is None else tick
    claims.ensure_watches()
    deadline = time.monotonic() + seconds
    total = 0
    while True:
        total += dispatch_once(enqueue=enqueue)
        left = deadline - time.monotonic()
        if left <= 0:
            return total
        sleep(min(tick, left))


def check_after_job(sender: Any, request: Any, status: str, **kwargs: Any) -> None:
    """`deploys.signals.job_finished`: check the host again now that the job is done."""
    if not enabled():
        return
    host_id = request.host_id

    def claim_and_enqueue() -> None:
        claims.ensure_watches()
        token, watch_id = claims.claim_host(host_id)
        if watch_id is not None:
            queue.enqueue_check(watch_id, token)

    transaction.on_commit(claim_and_enqueue)


__all__ = ["check_after_job", "dispatch_once", "run_dispatcher"]
