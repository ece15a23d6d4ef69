"""Context for every page: the jobs whose rollback failed (a banner until a later job for
that unit succeeds; deploys.selectors.failed_rollbacks), for people who may see requests."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from deploys.permissions import VIEW_REQUEST
from deploys.selectors import failed_rollbacks


def rollback_banner(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not user.has_perm(VIEW_REQUEST):
        return {}
    return {"failed_rollbacks": failed_rollbacks()}
