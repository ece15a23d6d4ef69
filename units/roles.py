"""Roles as Django groups: viewer (read), operator (edit profiles), approver (approve
deploys), admin (everything specadmin offers).

Groups hold model permissions, so views check `user.has_perm("units.change_serviceprofile")`
and never a group name. A data migration creates them on every install (units 0006);
`ensure_roles()` is idempotent (loaddemo calls it too) and only adds permissions, so an
administrator's extra grants survive.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group, Permission

VIEWER, OPERATOR, APPROVER, ADMIN = "viewer", "operator", "approver", "admin"

_READ = (
    "units.view_serviceprofile",
    "units.view_profileversion",
    "audit.view_auditevent",
    "deploys.view_host",
    "deploys.view_deployrequest",
    "perf.view_benchrun",
)
_EDIT = (
    "units.add_serviceprofile",
    "units.change_serviceprofile",
    "deploys.add_deployrequest",
    "perf.change_benchpolicy",
)
_HOSTS = (
    "deploys.add_host",
    "deploys.change_host",
    "deploys.add_unitadoption",
    "perf.accept_baseline",
)
# Granted once the deploy app defines it; skipped (not an error) before that.
_APPROVE = ("deploys.approve_deployrequest",)
# Stopping a job that runs (or is queued): whoever may start or approve one.
_CANCEL = ("deploys.cancel_deployrequest",)
# A host's watch settings (period, paused, hung-engine window, canary): watchdog's page.
_WATCH = ("watchdog.change_hostwatch",)
# Everyone's API tokens: see and revoke them (api/; each person makes their own).
_TOKENS = ("api.view_apitoken", "api.change_apitoken")

# Every notification and each delivery try, in Django's admin; "change" is its action
# that queues dead ones again (notify/admin.py; the fields stay read-only).
_OUTBOX = ("notify.view_notification", "notify.change_notification", "notify.view_deliveryattempt")

ROLE_PERMISSIONS: dict[str, tuple[str, ...]] = {
    VIEWER: _READ,
    OPERATOR: _READ + _EDIT + _CANCEL + _WATCH,
    APPROVER: _READ + _APPROVE + _CANCEL,
    ADMIN: _READ + _EDIT + _APPROVE + _HOSTS + _CANCEL + _TOKENS + _OUTBOX + _WATCH,
}


def _permissions(permission_model: Any, names: tuple[str, ...]) -> list[Any]:
    found = []
    for name in names:
        app_label, codename = name.split(".", 1)
        perm = permission_model.objects.filter(
            content_type__app_label=app_label, codename=codename
        ).first()
        if perm is not None:
            found.append(perm)
    return found


def ensure_roles(apps: Any = None) -> dict[str, Group]:
    """Create the four groups (if missing) and grant their permissions. Idempotent; only
    adds permissions, so an administrator's extra grants survive.

    `apps`: a migration's app registry (units migration 0006 creates the roles on every
    install that runs `migrate`); the project's models otherwise."""
    group_model = apps.get_model("auth", "Group") if apps is not None else Group
    permission_model = apps.get_model("auth", "Permission") if apps is not None else Permission
    groups: dict[str, Any] = {}
    for role, names in ROLE_PERMISSIONS.items():
        group, _ = group_model.objects.get_or_create(name=role)
        group.permissions.add(*_permissions(permission_model, names))
        groups[role] = group
    return groups
