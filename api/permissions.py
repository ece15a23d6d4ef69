"""Who may call what: the token's scope, then the same model permissions the web pages
check (`units.roles` gives them to the roles). The services check theirs again."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from api.authentication import token_of
from api.models import ApiToken


class TokenScope(BasePermission):
    """A `read` token may only read (and lint, which writes nothing)."""

    message = "This token's scope is “read”: it may only read. Make a “request” token."

    def has_permission(self, request: Request, view: Any) -> bool:
        token = token_of(request)
        if token is None or request.method in SAFE_METHODS:
            return True
        return token.scope == ApiToken.Scope.REQUEST or getattr(view, "read_only_post", False)


class RolePermissions(BasePermission):
    """`view.read_perms` for reads, `view.write_perms` for writes, as the web's pages."""

    message = "Your roles do not allow this."

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        if not user or not user.is_authenticated:
            return False
        reading = request.method in SAFE_METHODS or getattr(view, "read_only_post", False)
        perms = getattr(view, "read_perms", ()) if reading else getattr(view, "write_perms", ())
        missing = [p for p in perms if not user.has_perm(p)]
        if missing:
            self.message = f"Your roles do not allow this (it needs {', '.join(missing)})."
        return not missing
