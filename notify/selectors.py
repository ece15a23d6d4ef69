"""Reads: who is told about what, and each person's settings."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from deploys.models import Host
from notify.events import Event
from notify.models import EmailSetting, HostMute, Webhook

if TYPE_CHECKING:
    from django.contrib.auth.models import User

APPROVE = "deploys.approve_deployrequest"
# Permissions come from groups through Django's ModelBackend (units.roles); the login
# throttle's backend (axes) grants none.
_BACKEND = "django.contrib.auth.backends.ModelBackend"


def approvers(*, excluding: Any = None) -> QuerySet[Any]:
    """Active people who may approve deploys (the approver and admin roles, superusers),
    without `excluding` (a request's requester: never asked to approve their own)."""
    people = get_user_model().objects.with_perm(APPROVE, is_active=True, backend=_BACKEND)
    if excluding is not None:
        people = people.exclude(pk=excluding.pk)
    return people.order_by("pk")


def email_events(*, user: User) -> set[str]:
    """The events `user` gets e-mail for (every event unless they switched it off)."""
    off = set(EmailSetting.objects.filter(user=user, enabled=False).values_list("event", flat=True))
    return {event for event in Event.values if event not in off}


def user_webhooks(*, user: User) -> QuerySet[Webhook]:
    return Webhook.objects.filter(owner=user).select_related("host").order_by("id")


def muted_hosts(*, user: User) -> QuerySet[Host]:
    return Host.objects.filter(
        pk__in=HostMute.objects.filter(user=user).values("host_id")
    ).order_by("name")


def muting(*, users: Iterable[Any], host: Host | None) -> set[int]:
    """The ids among `users` who muted `host`."""
    if host is None:
        return set()
    return set(
        HostMute.objects.filter(host=host, user__in=list(users)).values_list("user_id", flat=True)
    )


__all__ = ["approvers", "email_events", "muted_hosts", "muting", "user_webhooks"]
