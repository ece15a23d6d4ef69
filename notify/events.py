"""The kinds of event specadmin tells people about (docs/notifications.md, "Events")."""

from __future__ import annotations

from django.db import models


class Event(models.TextChoices):
    APPROVAL_WAITING = "approval_waiting", "An approval is waiting"
    JOB_SUCCEEDED = "job_succeeded", "A job finished"
    JOB_FAILED = "job_failed", "A job failed"
    JOB_ROLLED_BACK = "job_rolled_back", "A job was rolled back"
    INCIDENT_OPENED = "incident_opened", "An incident opened"
    INCIDENT_CLOSED = "incident_closed", "An incident closed"


# A job's final status (deploys.models.DeployRequest.Status) → the event it is.
JOB_EVENTS: dict[str, str] = {
    "succeeded": Event.JOB_SUCCEEDED,
    "rolled_back": Event.JOB_ROLLED_BACK,
    "failed": Event.JOB_FAILED,
    "rollback_failed": Event.JOB_FAILED,
    "interrupted": Event.JOB_FAILED,
    "cancelled": Event.JOB_FAILED,
    "void": Event.JOB_FAILED,
}

__all__ = ["JOB_EVENTS", "Event"]
