"""Per-host locks for jobs: one row per host, held as a lease.

django-q2 has no per-host lock (docs/operations.md), and a worker may die without running
its `finally`, so the lock is a *lease*: an owner id and an expiry, claimed with a
conditional UPDATE (free or expired → ours), renewed while the job runs, and taken over
by the next job once it has expired. The logic lives in `deploys.jobs.lease`; this module
only holds the model, because Django loads models through `deploys.models`.
"""

from __future__ import annotations

from django.db import models


class HostLock(models.Model):
    """Who holds the host right now (`owner` empty: nobody) and until when."""

    host = models.OneToOneField(
        "deploys.Host", on_delete=models.CASCADE, primary_key=True, related_name="lock"
    )
    owner = models.CharField(max_length=200, blank=True)
    purpose = models.CharField(max_length=200, blank=True, help_text='e.g. "deploy #12"')
    request = models.ForeignKey(
        "deploys.DeployRequest",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    acquired_at = models.DateTimeField(null=True, blank=True)
    renewed_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["host"]

    def __str__(self) -> str:
        return f"lock on host #{self.host_id}: {self.owner or 'free'}"
