"""Host groups and rollouts: one profile version to many hosts, canary first, in batches.

A rollout's hosts are `RolloutHost` rows; each host's deployment is an ordinary
`deploys.DeployRequest` (its child), created and approved when the rollout is approved and
queued by the coordinator (`fleet.coordinator`) when its batch comes (docs/rollouts.md).
State changes that matter for "exactly once" are conditional UPDATEs (`fleet.services`,
`fleet.coordinator`), never read-modify-write in Python.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from deploys.models import DeployRequest, Host
from units.models import ProfileVersion


class HostGroup(models.Model):
    """A label for hosts that serve together (a host may be in several groups)."""

    name = models.SlugField(max_length=100, unique=True)
    description = models.CharField(max_length=200, blank=True)
    hosts = models.ManyToManyField(Host, related_name="host_groups", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Rollout(models.Model):
    """ "Deploy profile version V to these hosts": a canary, then batches, stopped when
    failures pass the budget. Approved once, by someone else, pinned to the set of unit
    texts the version renders to for its hosts."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for approval"
        REJECTED = "rejected", "Rejected"
        EXPIRED = "expired", "Expired"
        VOID = "void", "Void (something changed after the request)"
        RUNNING = "running", "Running"
        PAUSED = "paused", "Paused"
        SUCCEEDED = "succeeded", "Succeeded"
        HALTED = "halted", "Halted"
        ABORTED = "aborted", "Aborted"
        INTERRUPTED = "interrupted", "Interrupted (a worker stopped)"

    class Budget(models.TextChoices):
        COUNT = "count", "hosts"
        PERCENT = "percent", "% of the hosts after the canary"

    profile_version = models.ForeignKey(
        ProfileVersion, on_delete=models.PROTECT, related_name="rollouts"
    )
    group = models.ForeignKey(
        HostGroup, null=True, blank=True, on_delete=models.SET_NULL, related_name="rollouts"
    )
    unit_name = models.CharField(max_length=247)
    canary_count = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    batch_size = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    pause_s = models.PositiveIntegerField(default=0, validators=[MaxValueValidator(7 * 24 * 3600)])
    budget_kind = models.CharField(max_length=10, choices=Budget.choices, default=Budget.COUNT)
    budget_value = models.PositiveIntegerField(default=0)
    # sha256 over the sorted distinct unit texts' sha256s: what the approval pins.
    texts_sha256 = models.CharField(max_length=64)
    approved_texts_sha256 = models.CharField(max_length=64, blank=True)
    job_settings_sha256 = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    status_reason = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="rollouts"
    )
    requested_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_comment = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The batch that runs or ran last (0: the canary) and, during a pause between
    # batches, when the next one may start.
    current_batch = models.IntegerField(default=-1)
    next_batch_at = models.DateTimeField(null=True, blank=True)
    # Abort: who, and whether running jobs were cancelled (put back) or let finish.
    aborted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    abort_cancels = models.BooleanField(default=False)

    class Meta:
        ordering = ["-requested_at"]

    def __str__(self) -> str:
        return f"rollout #{self.pk} {self.profile_version} → {self.hosts.count()} hosts"

    @property
    def live(self) -> bool:
        """Still changing: approved and running, paused, or ended with jobs still running."""
        if self.status in (self.Status.RUNNING, self.Status.PAUSED):
            return True
        return (
            self.status in ENDED_EARLY
            and self.hosts.filter(state=RolloutHost.State.STARTED).exists()
        )


ENDED_EARLY = frozenset({Rollout.Status.HALTED, Rollout.Status.ABORTED, Rollout.Status.INTERRUPTED})


class RolloutHost(models.Model):
    """One host of a rollout: its place (batch 0 is the canary), the unit text the
    version renders to for it with its lint findings, and its deploy request."""

    class State(models.TextChoices):
        WAITING = "waiting", "Waiting for its batch"
        STARTED = "started", "Deploying"
        SUCCEEDED = "succeeded", "Deployed"
        FAILED = "failed", "Failed"
        REGRESSED = "regressed", "Regressed (benchmark gate)"
        CANCELLED = "cancelled", "Cancelled"
        INTERRUPTED = "interrupted", "Interrupted (worker lost)"
        NOT_REACHED = "not_reached", "Not reached: keeps what it ran"

    rollout = models.ForeignKey(Rollout, on_delete=models.CASCADE, related_name="hosts")
    host = models.ForeignKey(Host, on_delete=models.PROTECT, related_name="rollout_hosts")
    position = models.PositiveIntegerField()
    batch = models.PositiveIntegerField()
    unit_text = models.TextField()
    unit_sha256 = models.CharField(max_length=64)
    lint_findings = models.JSONField(default=list, blank=True)
    lint_vllm_version = models.CharField(max_length=30, blank=True)
    lint_systemd_version = models.PositiveIntegerField(null=True, blank=True)
    host_unit_sha256 = models.CharField(max_length=64, blank=True)
    request = models.OneToOneField(
        DeployRequest,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="rollout_host",
    )
    state = models.CharField(max_length=20, choices=State.choices, default=State.WAITING)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["rollout", "position"]
        constraints = [
            models.UniqueConstraint(fields=["rollout", "host"], name="fleet_one_row_per_host"),
            models.UniqueConstraint(fields=["rollout", "position"], name="fleet_one_position"),
        ]

    @property
    def is_canary(self) -> bool:
        return self.batch == 0


__all__ = ["ENDED_EARLY", "HostGroup", "Rollout", "RolloutHost"]
