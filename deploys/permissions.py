"""The permissions of the deploys app, and the one check every service runs first.

Roles are Django groups (`units.roles`); these are the permission names they carry.
Services check them themselves (not only the views), so every caller is held to them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from specadmin.access import MissingPermission

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser as User

VIEW_HOST = "deploys.view_host"
ADD_HOST = "deploys.add_host"
CHANGE_HOST = "deploys.change_host"
VIEW_REQUEST = "deploys.view_deployrequest"
REQUEST_DEPLOY = "deploys.add_deployrequest"
APPROVE_DEPLOY = "deploys.approve_deployrequest"
ADOPT_UNIT = "deploys.add_unitadoption"
CANCEL_JOB = "deploys.cancel_deployrequest"


def require(user: User | None, perm: str, action: str) -> None:
    """MissingPermission (a PermissionDenied: "You are not allowed to <action>.") unless
    `user` has `perm`; the 403 page then names the roles that carry it."""
    if user is None or not user.is_authenticated or not user.has_perm(perm):
        raise MissingPermission([perm], f"You are not allowed to {action}.")


__all__ = [
    "ADD_HOST",
    "ADOPT_UNIT",
    "APPROVE_DEPLOY",
    "CANCEL_JOB",
    "CHANGE_HOST",
    "REQUEST_DEPLOY",
    "VIEW_HOST",
    "VIEW_REQUEST",
    "require",
]
