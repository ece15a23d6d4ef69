"""The watchdog's fragments on other apps' pages (the host page, in `deploys`): templates
may show a higher app's fragment through its tags (docs/architecture.md, "Apps and
imports")."""

from __future__ import annotations

from typing import Any

from django import template

from watchdog import selectors
from watchdog.models import HostWatch

register = template.Library()


@register.inclusion_tag("watchdog/_host_watch.html")
def host_watch(host: Any) -> dict[str, Any]:
    """The host's open incidents now, and a placeholder that loads its live unit state and
    journal tail from the host once the page is shown (not while it renders)."""
    return {
        "host": host,
        "open": list(selectors.incidents(state="open", host=host)[:20]),
        "watch": HostWatch.objects.filter(host=host).first(),
    }
