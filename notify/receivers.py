"""What deploys' events become (deploys.signals): who is told, and in which words.

Each receiver queues in the sender's transaction, under a savepoint of its own, so a
failure here is logged and the request or the job's end is committed as if notify did not
exist (docs/notifications.md, "Events").
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.db import transaction
from django.urls import reverse

from deploys import signals
from deploys.models import DeployRequest
from notify import selectors, services
from notify.events import JOB_EVENTS, Event

log = logging.getLogger(__name__)


def guarded(receiver: Callable[..., None]) -> Callable[..., None]:
    """Run `receiver` under its own savepoint; log, never raise, what goes wrong."""

    @wraps(receiver)
    def run(*args: Any, **kwargs: Any) -> None:
        try:
            with transaction.atomic():
                receiver(*args, **kwargs)
        except Exception:
            log.exception("queueing a notification (%s) failed", receiver.__name__)

    return run


def _what(request: DeployRequest) -> str:
    version = request.profile_version
    kind = request.get_kind_display().lower()
    unit = f"{version.profile.name} v{version.number} ({request.unit_name})"
    return f"{kind} of {unit} on {request.host.name}"


def _payload(request: DeployRequest, **extra: Any) -> dict[str, Any]:
    version = request.profile_version
    return {
        "request": request.pk,
        "kind": request.kind,
        "host": request.host.name,
        "unit": request.unit_name,
        "profile": version.profile.name,
        "version": version.number,
        "requested_by": request.requested_by.get_username() if request.requested_by else None,
        "url": reverse("deploys:request_detail", args=[request.pk]),
        **extra,
    }


@guarded
def approval_waiting(sender: type, *, request: DeployRequest, **_: Any) -> None:
    """A new request that waits for a decision: every approver but its requester."""
    if not DeployRequest.objects.filter(
        pk=request.pk, status=DeployRequest.Status.PENDING
    ).exists():
        return  # approved on its own (restarts a host's admin let through)
    who = request.requested_by.get_username() if request.requested_by else "someone"
    services.enqueue(
        event=Event.APPROVAL_WAITING,
        subject=f"Approval waiting: request #{request.pk}, {_what(request)}",
        text=(
            f"{who} asks for the {_what(request)}. It needs the approval of someone else "
            f"before {request.expires_at:%Y-%m-%d %H:%M} UTC."
        ),
        payload=_payload(request, status="pending", expires_at=request.expires_at),
        users=selectors.approvers(excluding=request.requested_by),
        host=request.host,
    )


@guarded
def job_ended(sender: type, *, request: DeployRequest, status: str, reason: str, **_: Any) -> None:
    """A job's end: its requester."""
    event = JOB_EVENTS.get(status)
    if event is None:
        return
    words = status.replace("_", " ")
    services.enqueue(
        event=event,
        subject=f"Request #{request.pk} {words}: {_what(request)}",
        text=f"The {_what(request)} ended {words}: {reason}",
        payload=_payload(request, status=status, reason=reason),
        users=[request.requested_by] if request.requested_by else [],
        host=request.host,
    )


def connect() -> None:
    signals.request_created.connect(approval_waiting, dispatch_uid="notify.approval_waiting")
    signals.job_ended.connect(job_ended, dispatch_uid="notify.job_ended")


__all__ = ["approval_waiting", "connect", "guarded", "job_ended"]
