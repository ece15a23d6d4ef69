"""Benchmark results per profile version and host, the baseline of each (profile, host),
and each profile's benchmark policy.

A profile (`units.ServiceProfile`, all its versions) is the "profile family" the issue
compares within; results of one profile on one host are comparable when they were measured
with the same settings (`settings_key`). Foreign keys name other apps' models by label, so
this app imports no `deploys` code for its models.
"""

from __future__ import annotations

from django.conf import settings as conf
from django.db import models

from servebench.gate import DEFAULT_THRESHOLD_PCT


class BenchPolicy(models.Model):
    """How a profile is benchmarked after each deploy (no row: the defaults below)."""

    profile = models.OneToOneField(
        "units.ServiceProfile", on_delete=models.CASCADE, related_name="bench_policy"
    )
    enabled = models.BooleanField(default=True)
    threshold_pct = models.FloatField(default=DEFAULT_THRESHOLD_PCT)
    repeats = models.PositiveSmallIntegerField(default=3)
    rollback_on_regression = models.BooleanField(default=True)
    # While the gate says noisy, more repeats are measured for at most this long
    # (servebench.gate.more_repeats); 0: never.
    noisy_budget_s = models.PositiveIntegerField(default=300)
    # The client runs on the host as the unit's user (perf.onhost); off: from the worker.
    client_on_host = models.BooleanField(default=True)
    # servebench.RunSettings for a profile's first measurement; later runs reuse the
    # baseline's settings so that like is compared with like.
    endpoint = models.CharField(max_length=20, default="completions")
    prompts = models.CharField(max_length=20, default="mix")
    concurrency = models.JSONField(default=list)  # [] → [1]
    num_requests = models.PositiveIntegerField(default=16)
    max_tokens = models.PositiveIntegerField(default=256)
    seed = models.IntegerField(default=0)

    class Meta:
        verbose_name_plural = "bench policies"

    def __str__(self) -> str:
        return f"benchmark policy of {self.profile}"


class BenchRun(models.Model):
    """One servebench run (or an imported `vllm bench serve` result)."""

    class Verdict(models.TextChoices):
        NONE = "", "Not compared"
        PASS = "pass", "Pass"
        NOISY = "noisy", "Noisy (inconclusive)"
        REGRESSED = "regressed", "Regressed"

    profile = models.ForeignKey(
        "units.ServiceProfile", on_delete=models.PROTECT, related_name="bench_runs"
    )
    profile_version = models.ForeignKey(
        "units.ProfileVersion", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    host = models.ForeignKey("deploys.Host", on_delete=models.PROTECT, related_name="bench_runs")
    request = models.ForeignKey(
        "deploys.DeployRequest",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="bench_runs",
    )
    engine = models.CharField(max_length=30)
    url = models.CharField(max_length=500, blank=True)
    settings = models.JSONField(default=dict)
    settings_key = models.CharField(max_length=64)
    result = models.JSONField()
    incomplete = models.BooleanField(default=False)
    # First level (lowest concurrency), median over repeats: for lists and plots.
    output_tok_s = models.FloatField(null=True, blank=True)
    ttft_p50_ms = models.FloatField(null=True, blank=True)
    tpot_p50_ms = models.FloatField(null=True, blank=True)
    acceptance_rate = models.FloatField(null=True, blank=True)
    baseline_run = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    gate = models.JSONField(null=True, blank=True)
    verdict = models.CharField(max_length=10, choices=Verdict.choices, default="", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        conf.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["profile", "host", "created_at"])]

    def __str__(self) -> str:
        return f"bench run #{self.pk} of {self.profile_id} on {self.host_id}"


class Baseline(models.Model):
    """The run every later deploy of `profile` on `host` is compared with."""

    profile = models.ForeignKey(
        "units.ServiceProfile", on_delete=models.PROTECT, related_name="bench_baselines"
    )
    host = models.ForeignKey(
        "deploys.Host", on_delete=models.PROTECT, related_name="bench_baselines"
    )
    run = models.ForeignKey(BenchRun, on_delete=models.PROTECT, related_name="baseline_of")
    accepted_by = models.ForeignKey(
        conf.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    accepted_at = models.DateTimeField(auto_now=True)
    reason = models.CharField(max_length=500, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["profile", "host"], name="one_baseline_per_profile_host"
            )
        ]
        permissions = [("accept_baseline", "Can accept a benchmark result as the new baseline")]

    def __str__(self) -> str:
        # Names, as every page shows them: the history keeps this text (audit object_repr).
        return f"baseline of {self.profile.name} on {self.host.name}: run #{self.run_id}"
