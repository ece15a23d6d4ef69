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
