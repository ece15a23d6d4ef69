"""Watch state and incidents in the admin: for looking, as the other apps' admins are
(incidents open and close only through the checks, audited)."""

from __future__ import annotations

from django.contrib import admin

from units.admin import ReadOnlyAdmin
from watchdog.models import HostWatch, Incident


@admin.register(HostWatch)
class HostWatchAdmin(ReadOnlyAdmin):
    list_display = ("host", "enabled", "period_s", "next_due", "claimed_by", "last_check_at")
    list_filter = ("enabled",)


@admin.register(Incident)
class IncidentAdmin(ReadOnlyAdmin):
    list_display = ("host", "kind", "unit_name", "summary", "opened_at", "closed_at")
    list_filter = ("kind",)
    search_fields = ("summary", "key")
