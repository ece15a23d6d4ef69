"""Deploy facts shown on other apps' pages. A template may show a higher app's fragment
through its tags while Python code never imports upward (docs/architecture.md, "Apps and
imports"): the profile page (units) lists where each version runs (deploys)."""

from __future__ import annotations

from typing import Any

from django import template

from deploys.running import profile_deployments as deployments_of

register = template.Library()


@register.inclusion_tag("deploys/_profile_deployments.html")
def profile_deployments(profile: Any) -> dict[str, Any]:
    """Which hosts run which version of `profile` now, and the versions that failed,
    regressed or are last known good on a host (`deploys.running`)."""
    return {"deployments": deployments_of(profile=profile), "profile": profile}
