"""Reads: policies, baselines, runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import QuerySet

from deploys.models import DeployRequest
from perf.models import Baseline, BenchPolicy, BenchRun


def policy_for(profile: Any) -> BenchPolicy:
    """The profile's policy, or an unsaved one with the defaults."""
    try:
        return BenchPolicy.objects.get(profile=profile)
    except BenchPolicy.DoesNotExist:
        return BenchPolicy(profile=profile)


# The policy's fields that decide what a deploy's benchmark does (all but the profile).
POLICY_FIELDS = (
    "enabled",
    "threshold_pct",
    "repeats",
    "rollback_on_regression",
    "noisy_budget_s",
    "client_on_host",
    "endpoint",
    "prompts",
    "concurrency",
    "num_requests",
    "max_tokens",
    "seed",
)


def policy_settings(profile: Any) -> dict[str, Any]:
    """The profile's benchmark policy as JSON: part of a deploy request's job settings,
    which the approval covers (`deploys.job_settings`)."""
    policy = policy_for(profile)
    values = {name: getattr(policy, name) for name in POLICY_FIELDS}
    values["threshold_pct"] = float(values["threshold_pct"])
    values["concurrency"] = list(values["concurrency"] or [])
    return values


def policy_from_settings(profile: Any, settings: dict[str, Any] | None) -> BenchPolicy:
    """The policy a request was approved with (its stored job settings), unsaved; the
    profile's current one for a request stored without them."""
    if not settings:
        return policy_for(profile)
    return BenchPolicy(profile=profile, **{k: settings[k] for k in POLICY_FIELDS if k in settings})


def baseline_for(profile: Any, host: Any) -> Baseline | None:
    return Baseline.objects.select_related("run").filter(profile=profile, host=host).first()


def runs_for(profile: Any, host: Any) -> QuerySet[BenchRun]:
    """Newest first."""
    return BenchRun.objects.filter(profile=profile, host=host).select_related(
        "profile_version", "request"
    )


def profile_host_pairs() -> list[Mapping[str, Any]]:
    """Every (profile, host) with at least one run, for the results index."""
    return list(
        BenchRun.objects.values("profile_id", "profile__name", "host_id", "host__name")
        .distinct()
        .order_by("profile__name", "host__name")
    )


def last_deploy(profile: Any, host: Any) -> DeployRequest | None:
    """The newest successful deploy of any version of `profile` to `host`."""
    return (
        DeployRequest.objects.filter(
            profile_version__profile=profile, host=host, status=DeployRequest.Status.SUCCEEDED
        )
        .select_related("profile_version")
        .order_by("-finished_at", "-pk")
        .first()
    )


def host_runs(host: Any) -> QuerySet[BenchRun]:
    """Every run on `host`, of any profile, newest first (the host comparison page)."""
    return BenchRun.objects.filter(host=host).select_related(
        "profile", "profile_version", "request", "host"
    )


def hosts_with_runs() -> list[Mapping[str, Any]]:
    """Every host with at least one run, for the results index."""
    return list(BenchRun.objects.values("host_id", "host__name").distinct().order_by("host__name"))
