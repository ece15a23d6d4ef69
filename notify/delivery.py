"""The delivery worker's loop: claim a due notification, try it, record the try.

Exactly one worker sends a notification at a time: a claim is a conditional UPDATE
(`pending` and due → `sending`, or a `sending` whose claim expired) whose row count says
who won, as deploys' jobs are claimed (docs/architecture.md, "Jobs and steps"). A worker
that dies while sending leaves a claim that expires; the next run tries again (a message
may then arrive twice: at least once, never lost). A failed try waits `backoff · 2^(n-1)`
(at most `max_backoff`), and after `max_attempts` tries the notification is `dead`, shown
in the admin with every try (docs/notifications.md, "Delivery").
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from hostops.channel.bounds import clip_text
from notify import conf, senders
from notify.models import ERROR_CHARS, DeliveryAttempt, Notification

log = logging.getLogger(__name__)
State = Notification.State
CANDIDATES = 20


def claim_seconds() -> float:
    """How long a claim holds: longer than one try can take (a connect and a read, each up
    to the timeout, and margin), so a live worker never loses its claim mid-try."""
    return 3 * conf.timeout_s() + 30


def backoff(attempts: int) -> timedelta:
    """The wait after the `attempts`-th failed try."""
    return timedelta(
        seconds=min(conf.backoff_s() * 2 ** max(attempts - 1, 0), conf.max_backoff_s())
    )


def _due(now: datetime) -> Q:
    return Q(state=State.PENDING, next_attempt_at__lte=now) | Q(
        state=State.SENDING, claimed_until__lt=now, attempts__lt=conf.max_attempts()
    )


def _bury_abandoned(now: datetime) -> None:
    """A claim that expired on the last allowed try: its worker stopped mid-try."""
    Notification.objects.filter(
        state=State.SENDING, claimed_until__lt=now, attempts__gte=conf.max_attempts()
    ).update(state=State.DEAD, last_error="the worker sending its last try stopped")


def claim(now: datetime | None = None) -> Notification | None:
    """Take one due notification for this worker, or None when none is due."""
    now = now or timezone.now()
    until = now + timedelta(seconds=claim_seconds())
    for pk in (
        Notification.objects.filter(_due(now))
        .order_by("next_attempt_at", "pk")
        .values_list("pk", flat=True)[:CANDIDATES]
    ):
        won = Notification.objects.filter(_due(now), pk=pk).update(
            state=State.SENDING, claimed_until=until, attempts=F("attempts") + 1
        )
        if won:
            return Notification.objects.select_related("host").get(pk=pk)
    return None


def attempt(notification: Notification) -> bool:
    """Try a claimed notification once and record the try; True when it was delivered."""
    started = timezone.now()
    clock = time.monotonic()
    error = ""
    try:
        senders.send(notification)
    except senders.SendFailed as exc:
        error = str(exc)
    except Exception as exc:  # a bug must not stop the loop or lose the row
        log.exception("sending notification #%s crashed", notification.pk)
        error = f"{type(exc).__name__}: {exc}"
    duration_ms = int((time.monotonic() - clock) * 1000)
    error = clip_text(error, ERROR_CHARS)
    number = notification.attempts
    now = timezone.now()
    mine = Notification.objects.filter(pk=notification.pk, state=State.SENDING, attempts=number)
    with transaction.atomic():
        DeliveryAttempt.objects.create(
            notification=notification,
            number=number,
            started_at=started,
            duration_ms=duration_ms,
            status=DeliveryAttempt.Status.FAILED if error else DeliveryAttempt.Status.DELIVERED,
            error=error,
        )
        if not error:
            mine.update(state=State.DELIVERED, delivered_at=now, claimed_until=None, last_error="")
        elif number >= conf.max_attempts():
            mine.update(state=State.DEAD, claimed_until=None, last_error=error)
        else:
            mine.update(
                state=State.PENDING,
                claimed_until=None,
                next_attempt_at=now + backoff(number),
                last_error=error,
            )
    if error:
        log.warning("notification #%s, try %s: %s", notification.pk, number, error)
    return not error


def deliver_due(*, budget_s: float | None = None) -> int:
    """Deliver what is due until none is or the run's budget is spent; the number delivered."""
    deadline = time.monotonic() + (conf.run_budget_s() if budget_s is None else budget_s)
    _bury_abandoned(timezone.now())
    delivered = 0
    while time.monotonic() < deadline:
        notification = claim()
        if notification is None:
            break
        delivered += attempt(notification)
    return delivered


__all__ = ["attempt", "backoff", "claim", "deliver_due"]
