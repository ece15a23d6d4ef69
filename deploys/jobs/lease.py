"""One job per host at a time: a lease on the host's `HostLock` row.

Claimed with a conditional UPDATE (`owner = '' OR expires_at < now` → us), so two workers
on two machines cannot both win, without a lock server (healthchecks' claim pattern).
Times come from the database clock (`Now()`), so workers with skewed clocks agree on
when a lease has expired. A background thread renews the lease while the job runs; a job
whose worker died (django-q2's timeout kills the process, no `finally` runs) leaves a
lease that simply expires and is taken over by the next job.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from types import TracebackType

from django.conf import settings
from django.db import connection, transaction
from django.db.models import DateTimeField, ExpressionWrapper, Q
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Now

from deploys.locks import HostLock

log = logging.getLogger(__name__)

# A job renews every LEASE * RENEW_FRACTION seconds (10 s), from a thread of its own, so
# its longest waits renew too and a lease survives five missed renewals (a busy SQLite
# write lock, a slow database); a dead worker is seen (`deploys.jobs.liveness`) and its
# host freed at most LEASE after its last renewal (docs/architecture.md, "Jobs and steps").
DEFAULT_LEASE_S = 60.0
RENEW_FRACTION = 1 / 6
DEFAULT_WAIT_S = 600.0
POLL_S = 0.5
# The name of the runner's own first step, which takes the lease (its JobStep row).
LOCK_STEP = "host_lock"


def lease_seconds() -> float:
    return float(getattr(settings, "DEPLOY_LOCK_LEASE_S", DEFAULT_LEASE_S))


def wait_seconds() -> float:
    return float(getattr(settings, "DEPLOY_LOCK_WAIT_S", DEFAULT_WAIT_S))


def new_owner_id() -> str:
    """Unique per acquisition, readable in the admin: which machine and process holds it."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


class HostBusy(Exception):
    """Another job held the host for longer than we were willing to wait."""


def _db_now_plus(seconds: float) -> ExpressionWrapper[CombinedExpression]:
    return ExpressionWrapper(Now() + timedelta(seconds=seconds), output_field=DateTimeField())


class HostLease:
    """A held lease. Use `HostLease.acquire(...)`; release it in a `finally` (or `with`)."""

    def __init__(
        self,
        host_id: int,
        owner: str,
        duration: float,
        took_over_from: str,
        took_over_request: int | None = None,
    ) -> None:
        self.host_id = host_id
        self.owner = owner
        self.duration = duration
        self.took_over_from = took_over_from  # "" unless an expired lease was taken over
        self.took_over_request = took_over_request  # the request whose lease that was
        self._lost = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- acquiring ----------------------------------------------------------------------
    @classmethod
    def try_acquire(
        cls,
        host_id: int,
        *,
        owner: str | None = None,
        purpose: str = "",
        request_id: int | None = None,
        duration: float | None = None,
    ) -> HostLease | None:
        """One attempt: the lease if the host was free or its lease had expired, else None."""
        owner = owner or new_owner_id()
        duration = lease_seconds() if duration is None else duration
        # The row exists once per host; INSERT … ON CONFLICT DO NOTHING makes creating it
        # race-free, so the claim below is always an UPDATE of an existing row.
        HostLock.objects.bulk_create([HostLock(host_id=host_id)], ignore_conflicts=True)
        with transaction.atomic():
            # select_for_update: on PostgreSQL, read the previous owner consistently with
            # the claim (SQLite's IMMEDIATE transaction already holds the write lock).
            before = (
                HostLock.objects.select_for_update()
                .filter(host_id=host_id)
                .values("owner", "expires_at", "request_id")
                .first()
            )
            claimed = (
                HostLock.objects.filter(host_id=host_id)
                .filter(Q(owner="") | Q(expires_at__lt=Now()))
                .update(
                    owner=owner,
                    purpose=purpose[:200],
                    request_id=request_id,
                    acquired_at=Now(),
                    renewed_at=Now(),
                    expires_at=_db_now_plus(duration),
                )
            )
        if claimed != 1:
            return None
        previous = (before["owner"] or "") if before else ""
        if previous:
            log.warning("host #%s: took over the expired lease of %s", host_id, previous)
        previous_request = before["request_id"] if before and previous else None
        return cls(host_id, owner, duration, previous, previous_request)

    @classmethod
    def acquire(
        cls,
        host_id: int,
        *,
        purpose: str = "",
        request_id: int | None = None,
        duration: float | None = None,
        wait: float | None = None,
        poll: float = POLL_S,
        label: str = "",
        may_try: Callable[[], bool] | None = None,
    ) -> HostLease:
        """Wait up to `wait` seconds for the host; raise HostBusy naming the holder.

        `label` names the host in that message (default "host #<id>"). `may_try`: asked
        before each attempt; False means "not our turn yet" (jobs queue in order).
        """
        wait = wait_seconds() if wait is None else wait
        owner = new_owner_id()
        deadline = time.monotonic() + wait
        while True:
            if may_try is None or may_try():
                lease = cls.try_acquire(
                    host_id, owner=owner, purpose=purpose, request_id=request_id, duration=duration
                )
                if lease is not None:
                    return lease
            if time.monotonic() >= deadline:
                holder = HostLock.objects.filter(host_id=host_id).first()
                who = f"{holder.owner} ({holder.purpose})" if holder else "?"
                until = holder.expires_at.isoformat() if holder and holder.expires_at else "?"
                name = label or f"host #{host_id}"
                raise HostBusy(
                    f"{name} is busy: held by {who} until {until}; waited {wait:g}s for it"
                )
            time.sleep(poll)

    # -- holding ------------------------------------------------------------------------
    @property
    def lost(self) -> bool:
        """True once a renewal found the row owned by someone else (our lease had expired)."""
        return self._lost.is_set()

    def renew(self) -> bool:
        """Extend the lease; False (and `lost`) when it is no longer ours — taken over, or
        expired: by then the job counts as lost (`deploys.jobs.liveness`) and its request
        may be marked interrupted, so it must not go on as if it still held the host."""
        renewed = HostLock.objects.filter(
            host_id=self.host_id, owner=self.owner, expires_at__gt=Now()
        ).update(renewed_at=Now(), expires_at=_db_now_plus(self.duration))
        if renewed != 1:
            self._lost.set()
            return False
        return True

    def start_renewing(self, every: float | None = None) -> None:
        """Renew from a daemon thread every `every` seconds (default: RENEW_FRACTION of
        the lease)."""
        every = self.duration * RENEW_FRACTION if every is None else every
        self._thread = threading.Thread(
            target=self._renew_loop, args=(every,), daemon=True, name=f"lease-{self.host_id}"
        )
        self._thread.start()

    def _renew_loop(self, every: float) -> None:
        try:
            while not self._stop.wait(every):
                try:
                    if not self.renew():
                        log.error("host #%s: lease of %s was lost", self.host_id, self.owner)
                        return
                except Exception:  # a database hiccup: the lease may still be valid
                    log.exception("host #%s: renewing the lease failed", self.host_id)
        finally:
            connection.close()  # this thread's own connection

    def release(self) -> bool:
        """Stop renewing and free the host (only if it is still ours). Idempotent."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
        released = HostLock.objects.filter(host_id=self.host_id, owner=self.owner).update(
            owner="", purpose="", request_id=None, expires_at=None
        )
        return released == 1

    def __enter__(self) -> HostLease:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.release()
        except Exception:  # the lease expires on its own; do not mask the job's own error
            log.exception("host #%s: releasing the lease failed", self.host_id)


__all__ = ["LOCK_STEP", "HostBusy", "HostLease", "lease_seconds", "new_owner_id", "wait_seconds"]
