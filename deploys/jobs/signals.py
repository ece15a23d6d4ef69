"""Signals the job runner sends, for apps above `deploys` (the watchdog checks a host again
after every job; notifications may tell the requester) without `deploys` importing them."""

from __future__ import annotations

from django.dispatch import Signal

# Sent once a job has ended and freed the host, with sender=DeployRequest, request=the
# request (refreshed), status=its final status. Receivers must not raise (send_robust).
job_finished = Signal()

__all__ = ["job_finished"]
