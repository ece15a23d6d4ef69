"""Which worker checks which host, exactly once per period: conditional UPDATEs on
`HostWatch`, on the database clock, as jobs claim requests and hosts (deploys.jobs.lease).

A claim sets `claimed_by` (a token unique to that claim) and `claimed_until` (the check's
time limit) only where the watch is due (`next_due <= now`), not claimed or its claim
expired (`claimed_until < now`), and no job holds the host's lease. Two dispatchers
running the same UPDATE cannot both win a row: the second finds the row's conditions
false (on PostgreSQL it re-reads the row once the first commits), which holds only for
conditions in the UPDATE's own WHERE, not in a subquery (`_take` says why). The check's end
(`finish`) is conditional on the token too, so a late or duplicate delivery of a check
whose claim expired and was taken over writes nothing.
"""

from __future__ import annotations

import os
import random
import socket
import uuid
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from django.conf import settings
from django.db.models import DateTimeField, Exists, ExpressionWrapper, F, OuterRef, Q
from django.db.models.functions import Greatest, Least, Now
from django.utils import timezone

from deploys.locks import HostLock
from deploys.models import Host
from watchdog.models import HostWatch

DEFAULT_CHECK_TIMEOUT_S = 120.0
DEFAULT_BATCH = 500
SPREAD_S = 30.0  # the default period (watchdog.models.DEFAULT_PERIOD_S)


def check_timeout_s() -> float:
    return float(getattr(settings, "WATCHDOG_CHECK_TIMEOUT_S", DEFAULT_CHECK_TIMEOUT_S))


def new_token() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"[:100]


def _db_now_plus(seconds: float) -> ExpressionWrapper:  # type: ignore[type-arg]
    return ExpressionWrapper(Now() + timedelta(seconds=seconds), output_field=DateTimeField())


def ensure_watches() -> int:
    """A watch row for every host specadmin can reach (not archived; local, or SSH with a
    pinned key), first due within 30 s; how many were added. Race-free: INSERT … ON
    CONFLICT DO NOTHING."""
    hosts = Host.objects.filter(archived=False).filter(
        Q(transport=Host.Transport.LOCAL) | ~Q(host_key="")
    )
    missing = hosts.exclude(watch__isnull=False).values_list("pk", flat=True)
    # Due within the first period, spread over it: hosts added at once (an install, an
    # import of many hosts) do not all fall due in the same second, period after period.
    now = timezone.now()
    rows = [
        HostWatch(host_id=pk, next_due=now + timedelta(seconds=random.uniform(0, SPREAD_S)))
        for pk in missing
    ]
    HostWatch.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def _row_claimable() -> Q:
    """What the watch's own row must say to be claimed: due, and not claimed (or its claim
    expired). The claiming UPDATE keeps these in its own WHERE (`_take`)."""
    return Q(enabled=True, next_due__lte=Now()) & (
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=Now())
    )


def _claimable() -> Q:
    busy = HostLock.objects.exclude(owner="").filter(expires_at__gte=Now()).values("host_id")
    return _row_claimable() & Q(host__archived=False) & ~Q(host_id__in=busy)


def _take(candidates: list[int], token: str, hold_s: float) -> None:
    """Claim those of `candidates` still claimable, by their ids. Two claimers racing for
    a row: on PostgreSQL the second UPDATE waits for the first to commit and evaluates its
    WHERE again on the row's new version, but not a subquery's. An UPDATE filtered through
    the host (a join) is written by Django as `WHERE id IN (SELECT … JOIN …)`, every
    condition inside the subquery, and both claimers then won the same hosts. So the
    candidates are chosen first (host not archived, no job's lease) and the UPDATE names
    them by id with only the row's own conditions."""
    if candidates:
        HostWatch.objects.filter(pk__in=candidates).filter(_row_claimable()).update(
            claimed_by=token, claimed_until=_db_now_plus(hold_s)
        )


def claim_due(*, limit: int = DEFAULT_BATCH, hold_s: float | None = None) -> tuple[str, list[int]]:
    """Claim up to `limit` due watches, most overdue first: (token, their ids)."""
    token = new_token()
    hold = check_timeout_s() if hold_s is None else hold_s
    due = HostWatch.objects.filter(_claimable()).order_by("next_due").values_list("pk", flat=True)
    _take(list(due[:limit]), token, hold)
    return token, list(HostWatch.objects.filter(claimed_by=token).values_list("pk", flat=True))


def make_due(host_id: int) -> int:
    """Check this host at the next claim (after a job): its watch is due now."""
    return HostWatch.objects.filter(host_id=host_id, enabled=True).update(next_due=Now())


def claim_host(host_id: int, *, hold_s: float | None = None) -> tuple[str, int | None]:
    """Claim this host's watch now if it is claimable (made due first)."""
    make_due(host_id)
    token = new_token()
    hold = check_timeout_s() if hold_s is None else hold_s
    _take(
        list(
            HostWatch.objects.filter(host_id=host_id)
            .filter(_claimable())
            .values_list("pk", flat=True)
        ),
        token,
        hold,
    )
    pk = HostWatch.objects.filter(claimed_by=token).values_list("pk", flat=True).first()
    return token, pk


def _next_due(period_s: float) -> Greatest:
    """One period after the time it was due (so the delays of a queue or a slow check do
    not add up period after period), but never sooner than half a period from now (a
    host checked late is not checked again at once)."""
    return Greatest(
        ExpressionWrapper(
            F("next_due") + timedelta(seconds=period_s), output_field=DateTimeField()
        ),
        _db_now_plus(period_s / 2),
    )


def finish(
    watch_id: int,
    token: str,
    *,
    period_s: float,
    readings: dict[str, Any] | None,
    seconds: float | None,
    error: str = "",
    recheck_in: float | None = None,
) -> bool:
    """End our claim: due again a period after it was due (`_next_due`), or in
    `recheck_in` seconds when that is sooner (a verdict the next reading can decide,
    `watchdog.checks.Verdict.recheck_at`); False when it was no longer ours.
    `readings` None keeps the last ones (a check that was skipped)."""
    next_due: Any = _next_due(period_s)
    if recheck_in is not None:
        next_due = Least(next_due, _db_now_plus(max(recheck_in, 0.0)))
    values: dict[str, Any] = {
        "claimed_by": "",
        "claimed_until": None,
        "next_due": next_due,
        "last_error": error[:2000],
    }
    if readings is not None:
        values.update(readings=readings, last_check_at=Now(), last_check_s=seconds)
    return bool(HostWatch.objects.filter(pk=watch_id, claimed_by=token).update(**values))


def _lease_held_q() -> Exists:
    """A job holds the host's lease now (for an annotation on the watch)."""
    return Exists(
        HostLock.objects.filter(host_id=OuterRef("host_id"), expires_at__gte=Now()).exclude(
            owner=""
        )
    )


class Claimed(NamedTuple):
    watch: HostWatch  # with its host
    lease_held: bool  # a job holds the host's lease now
    since: datetime  # the database's clock when the check began


def claimed_watch(watch_id: int, token: str) -> Claimed | None:
    """Our claimed watch with its host, whether a job holds the host's lease now, and the
    database's time, in one query; None when the claim is no longer ours."""
    watch = (
        HostWatch.objects.select_related("host")
        .annotate(lease_held=_lease_held_q(), began=Now())
        .filter(pk=watch_id, claimed_by=token)
        .first()
    )
    if watch is None:
        return None
    return Claimed(watch, bool(getattr(watch, "lease_held", True)), watch.began)


def job_took_host(host_id: int, since: datetime) -> bool:
    """A job holds the host's lease now, or took it at or after `since` (the database's
    clock, as the lease's `acquired_at`): what was read meanwhile may be a deploy half
    done (the unit stopped, GPUs held by the old server), not the host's state."""
    return (
        HostLock.objects.filter(host_id=host_id)
        .filter(Q(acquired_at__gte=since) | (Q(expires_at__gte=Now()) & ~Q(owner="")))
        .exists()
    )


__all__ = [
    "Claimed",
    "check_timeout_s",
    "claim_due",
    "claim_host",
    "claimed_watch",
    "ensure_watches",
    "finish",
    "job_took_host",
    "make_due",
]
