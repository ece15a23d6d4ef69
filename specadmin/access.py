"""The one access check every page uses: `@requires(PERM, …)`.

Anonymous users go to the login page; a logged-in user without one of the permissions
gets a 403. Permissions are Django model permissions that the role groups carry
(`units.roles`); pages check permissions, never group names. This module imports only
Django, so every app's views may use it (docs/architecture.md, "Apps and imports").
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpResponse

View = Callable[..., HttpResponse]


def requires(*perms: str) -> Callable[[View], View]:
    """Login first (anonymous users go to the login page), then the permissions (403)."""

    def decorator(view: View) -> View:
        return login_required(permission_required(perms, raise_exception=True)(view))

    return decorator
