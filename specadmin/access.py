"""The one access check every page uses: `@requires(PERM, …)`, and the page a user sees
when it refuses (`permission_denied`, the project's 403 handler).

Anonymous users go to the login page; a logged-in user without one of the permissions
gets a 403 page that says which roles carry them. Permissions are Django model
permissions that the role groups carry (`units.roles`); pages check permissions, never
group names, and the 403 page reads which groups hold a permission from the database (so
an administrator's own grants are named too). This module imports only Django, so every
app may use it (docs/architecture.md, "Apps and imports").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import Group, Permission
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

View = Callable[..., HttpResponse]


class MissingPermission(PermissionDenied):
    """A refusal that knows which permissions were missing (for the 403 page)."""

    def __init__(self, perms: Iterable[str], message: str = "") -> None:
        self.perms = tuple(perms)
        super().__init__(message or "Your roles do not allow this page.")


def requires(*perms: str) -> Callable[[View], View]:
    """Login first (anonymous users go to the login page), then the permissions (403)."""

    def decorator(view: View) -> View:
        @wraps(view)
        def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            missing = [perm for perm in perms if not request.user.has_perm(perm)]
            if missing:
                raise MissingPermission(missing)
            return view(request, *args, **kwargs)

        return login_required(checked)

    return decorator


def _permission(name: str) -> Permission | None:
    app_label, _, codename = name.partition(".")
    return (
        Permission.objects.filter(content_type__app_label=app_label, codename=codename)
        .select_related("content_type")
        .first()
    )


def _needs(perms: tuple[str, ...]) -> list[dict[str, Any]]:
    """For each missing permission: what it allows and the groups (roles) that carry it."""
    needs = []
    for name in perms:
        permission = _permission(name)
        if permission is None:
            continue
        roles = Group.objects.filter(permissions=permission).order_by("name")
        action = permission.name.removeprefix("Can ").removeprefix("can ")
        needs.append({"action": action, "roles": [group.name for group in roles]})
    return needs


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """The 403 page: what was refused, which roles would allow it, which the user has."""
    perms = getattr(exception, "perms", ())
    message = str(exception) if exception is not None and str(exception) else ""
    user = request.user
    own_roles: list[str] = []
    if user.is_authenticated:
        own_roles = list(
            Group.objects.filter(Q(user=user)).order_by("name").values_list("name", flat=True)
        )
    return render(
        request,
        "403.html",
        {"message": message, "needs": _needs(perms), "own_roles": own_roles},
        status=403,
    )
