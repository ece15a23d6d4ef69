"""Incidents (the watchdog's) → notifications, wired in one line:

    notify.incidents.connect(incident_opened, incident_closed)

Each signal is expected to carry the incident as the `incident` keyword (or as the sender,
when that is not a class), an object with `host` (a deploys Host, or None) and, where it
has them, `pk`, `kind`, `summary` (or `title`), `evidence`, `started_at` / `ended_at`.
Who is told: the approvers and admins (who may act on a host) and the webhooks added for
the incident's host (docs/notifications.md, "Incidents").
"""

from __future__ import annotations

from typing import Any

from django.dispatch import Signal
from django.urls import NoReverseMatch, reverse

from notify import selectors, services
from notify.events import Event
from notify.receivers import guarded


def _incident(sender: Any, kwargs: dict[str, Any]) -> Any:
    incident = kwargs.get("incident")
    if incident is None and not isinstance(sender, type):
        incident = sender
    return incident


def _summary(incident: Any) -> str:
    for name in ("summary", "title", "description"):
        value = getattr(incident, name, None)
        if value:
            return str(value)
    return str(incident)


def _when(moment: Any) -> str | None:
    return moment.isoformat() if moment is not None else None


def _host_url(host: Any) -> str:
    try:
        return reverse("deploys:host_detail", args=[host.pk]) if host is not None else ""
    except NoReverseMatch:
        return ""


def _notify(event: str, sender: Any, kwargs: dict[str, Any]) -> None:
    incident = _incident(sender, kwargs)
    host = kwargs.get("host") or getattr(incident, "host", None)
    kind = str(getattr(incident, "kind", "") or "incident")
    summary = _summary(incident)
    where = f" on {host.name}" if host is not None else ""
    verb = "opened" if event == Event.INCIDENT_OPENED else "closed"
    payload = {
        "incident": getattr(incident, "pk", None),
        "kind": kind,
        "summary": summary,
        "host": host.name if host is not None else None,
        "evidence": getattr(incident, "evidence", None),
        "opened_at": _when(getattr(incident, "opened_at", None)),
        "closed_at": _when(getattr(incident, "closed_at", None)),
        "url": _host_url(host),
    }
    services.enqueue(
        event=event,
        subject=f"Incident {verb}{where}: {kind}",
        text=f"{kind}{where} {verb}: {summary}",
        payload=payload,
        users=selectors.approvers(),
        host=host,
    )


@guarded
def incident_opened(sender: Any, **kwargs: Any) -> None:
    _notify(Event.INCIDENT_OPENED, sender, kwargs)


@guarded
def incident_closed(sender: Any, **kwargs: Any) -> None:
    _notify(Event.INCIDENT_CLOSED, sender, kwargs)


def connect(opened: Signal, closed: Signal) -> None:
    """Tell people when `opened` / `closed` is sent (strong references, one each)."""
    opened.connect(incident_opened, dispatch_uid="notify.incident_opened")
    closed.connect(incident_closed, dispatch_uid="notify.incident_closed")


__all__ = ["connect", "incident_closed", "incident_opened"]
