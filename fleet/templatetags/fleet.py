"""The host pages' group tags: `{% load fleet %}{% host_groups host %}` in a `deploys`
template shows this app's fragment without `deploys` importing `fleet`
(docs/architecture.md, "Apps and imports")."""

from __future__ import annotations

from typing import Any

from django import template

from deploys.models import Host
from fleet.selectors import groups_of_host

register = template.Library()


@register.inclusion_tag("fleet/_host_groups.html")
def host_groups(host: Host) -> dict[str, Any]:
    return {"groups": list(groups_of_host(host))}
