"""Reading audit history: the filters behind the history page and its exports."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.db.models import Q, QuerySet
from django.utils import timezone

from audit.models import AuditEvent, AuditKind


@dataclass(frozen=True)
class HistoryFilters:
    """What the history page filters by; empty values mean "any"."""

    host: str = ""
    profile: str = ""
    user: str = ""
    kind: str = ""
    since: date | None = None
    until: date | None = None
    rollout: int | None = None


# A rollout's story: its own events, and those of the hosts' deploy requests its approval
# created (`rollout.approved` names them, docs/rollouts.md "Audit"). Read from the
# history itself: `audit` does not import `fleet`.
ROLLOUT_TYPE = "fleet.rollout"
REQUEST_TYPE = "deploys.deployrequest"
ROLLOUT_APPROVED = "rollout.approved"


def rollout_story(events: QuerySet[AuditEvent], rollout: int) -> QuerySet[AuditEvent]:
    """`events` narrowed to rollout #`rollout` and its hosts' requests."""
    approvals = AuditEvent.objects.filter(
        object_type=ROLLOUT_TYPE, object_id=str(rollout), kind=ROLLOUT_APPROVED
    ).values_list("payload", flat=True)
    requests = {
        str(pk)
        for payload in approvals
        if isinstance(payload, dict) and isinstance(payload.get("requests"), dict)
        for pk in payload["requests"].values()
    }
    return events.filter(
        Q(object_type=ROLLOUT_TYPE, object_id=str(rollout))
        | Q(object_type=REQUEST_TYPE, object_id__in=requests)
    )


def audit_event_list(*, filters: HistoryFilters) -> QuerySet[AuditEvent]:
    """Events matching every given filter, newest first.

    `user` matches the username at the time *or* the user's current name, so history
    survives renames in both directions. `kind` is an exact kind or a family: `deploy`
    matches `deploy.requested`, `deploy.approved`, …. Dates are inclusive days in the
    current time zone. `rollout`: that rollout's story (`rollout_story`).
    """
    events = AuditEvent.objects.order_by("-id")
    if filters.rollout is not None:
        events = rollout_story(events, filters.rollout)
    if filters.host:
        events = events.filter(host_name=filters.host)
    if filters.profile:
        events = events.filter(profile_name=filters.profile)
    if filters.user:
        events = events.filter(Q(actor_name=filters.user) | Q(actor__username=filters.user))
    if filters.kind:
        events = events.filter(Q(kind=filters.kind) | Q(kind__startswith=filters.kind + "."))
    if filters.since:
        events = events.filter(at__gte=_start_of(filters.since))
    # "Until 9999-12-31" (the last date there is) has no day after it: no upper bound.
    if filters.until and filters.until < date.max:
        events = events.filter(at__lt=_start_of(filters.until + timedelta(days=1)))
    return events


def audit_kind_choices() -> list[str]:
    """Known kinds plus any other kind already recorded, sorted, for the filter's list."""
    recorded = AuditEvent.objects.order_by().values_list("kind", flat=True).distinct()
    return sorted({*AuditKind, *recorded})


def _start_of(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))
