"""Watch state per host and the incidents the checks open and close (docs/watchdog.md).

Claims are conditional UPDATEs on `HostWatch` (`watchdog.claims`), as jobs claim
requests; an incident is open while `closed_at` is null, and at most one is open per
(host, key) — the key names the kind and what it is about ("gpu_leftover:vllm-a:pid 4242").
"""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from deploys.models import Host

DEFAULT_PERIOD_S = 30
MIN_PERIOD_S, MAX_PERIOD_S = 5, 3600
MIN_HUNG_WINDOW_S, MAX_HUNG_WINDOW_S = 10, 3600


class HostWatch(models.Model):
    """When a host is checked next, who holds the check now, and what the last one read."""

    host = models.OneToOneField(Host, on_delete=models.CASCADE, related_name="watch")
    enabled = models.BooleanField(default=True)
    period_s = models.PositiveIntegerField(
        default=DEFAULT_PERIOD_S,
        validators=[MinValueValidator(MIN_PERIOD_S), MaxValueValidator(MAX_PERIOD_S)],
    )
    # Per host, changed on its watch page (watchdog.views.watch_settings, audited): the
    # hung-engine window (None: the WATCHDOG_HUNG_WINDOW_S setting) and the one-token
    # canary request (off by default: it adds one generation request per period).
    hung_window_s = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(MIN_HUNG_WINDOW_S), MaxValueValidator(MAX_HUNG_WINDOW_S)],
    )
    canary = models.BooleanField(default=False)
    next_due = models.DateTimeField(db_index=True)
    claimed_by = models.CharField(max_length=100, blank=True, default="")
    claimed_until = models.DateTimeField(null=True, blank=True)
    last_check_at = models.DateTimeField(null=True, blank=True)
    last_check_s = models.FloatField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    # The last reading (units, GPUs, /metrics now) and the short history the windowed
    # checks need (watchdog.readings bounds both).
    readings = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [models.Index(fields=["enabled", "next_due"])]

    def __str__(self) -> str:
        return f"watch of {self.host_id}"


class Incident(models.Model):
    class Kind(models.TextChoices):
        UNIT_FAILED = "unit_failed", "Unit not running"
        RESTART_LOOP = "restart_loop", "Restart loop"
        DRIFT = "drift", "Unit file changed on the host"
        GPU_LEFTOVER = "gpu_leftover", "GPU memory held by a leftover"
        GPU_FOREIGN = "gpu_foreign", "GPU memory held by another process"
        HUNG_ENGINE = "hung_engine", "Engine hung"
        ACCEPTANCE_COLLAPSE = "acceptance_collapse", "Speculative acceptance collapsed"
        UNREACHABLE = "unreachable", "Could not be read"

    host = models.ForeignKey(Host, on_delete=models.PROTECT, related_name="incidents")
    kind = models.CharField(max_length=30, choices=Kind.choices)
    unit_name = models.CharField(max_length=247, blank=True)
    # Which check judged it: an incident closes only when that check ran and found it gone.
    scope = models.CharField(max_length=300)
    key = models.CharField(max_length=400)
    summary = models.CharField(max_length=500)
    evidence = models.JSONField(default=dict, blank=True)
    opened_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_reason = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-opened_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["host", "key"],
                condition=Q(closed_at__isnull=True),
                name="one_open_incident_per_host_key",
            )
        ]
        indexes = [models.Index(fields=["host", "closed_at"])]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} on {self.host_id}: {self.summary[:80]}"

    @property
    def is_open(self) -> bool:
        return self.closed_at is None
