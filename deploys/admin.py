"""Hosts, deploy requests and job runs in the admin: for looking, not for editing.

Every change here goes through `deploys.services` on the app's pages (pinning keys,
deciding requests: permission checks, conditional claims, audit events); saving rows in
the admin would skip all of that, so these admins are read-only.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django_q import admin as _django_q_admin  # noqa: F401  (registers its admins first)
from django_q.models import Failure, OrmQ, Schedule, Success

from deploys.models import DeployRequest, Host, JobStep, PushedUnit
from units.admin import ReadOnlyAdmin


@admin.register(Host)
class HostAdmin(ReadOnlyAdmin):
    list_display = (
        "name",
        "address",
        "ssh_port",
        "transport",
        "host_key_fingerprint",
        "systemd_version",
        "vllm_version",
        "gpu_count",
        "probed_at",
        "archived",
    )
    list_filter = ("transport", "archived")
    search_fields = ("name", "address")


class JobStepInline(admin.TabularInline):
    model = JobStep
    extra = 0
    can_delete = False
    fields = ("name", "status", "started_at", "finished_at", "log")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(DeployRequest)
class DeployRequestAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "unit_name",
        "host",
        "profile_version",
        "status",
        "requested_by",
        "requested_at",
        "decided_by",
        "expires_at",
    )
    list_filter = ("status", "host")
    search_fields = ("unit_name", "host__name", "profile_version__profile__name")
    list_select_related = ("host", "profile_version__profile", "requested_by", "decided_by")
    date_hierarchy = "requested_at"
    inlines = [JobStepInline]


@admin.register(JobStep)
class JobStepAdmin(ReadOnlyAdmin):
    list_display = ("id", "request", "name", "status", "started_at", "finished_at")
    list_filter = ("status", "name")
    list_select_related = ("request__host",)


@admin.register(PushedUnit)
class PushedUnitAdmin(ReadOnlyAdmin):
    list_display = ("id", "host", "unit_name", "sha256", "backup_path", "pushed_at")
    list_filter = ("host",)
    list_select_related = ("host",)


# -- django-q2's models: read-only here as well ---------------------------------------------
# A Schedule names any importable function and its arguments, and the workers run it: an
# admin who could edit one could run anything on every worker. Schedules come
# from migrations only (deploys 0003, audit 0005). Resubmitting a task by hand is gone too:
# a deploy is requested and approved on its pages, never replayed from the admin.
for _model in (Schedule, Success, Failure, OrmQ):
    if admin.site.is_registered(_model):
        _base = type(admin.site.get_model_admin(_model))
        admin.site.unregister(_model)
        admin.site.register(
            _model,
            type(f"ReadOnly{_base.__name__}", (ReadOnlyAdmin, _base), {"actions": []}),
        )
