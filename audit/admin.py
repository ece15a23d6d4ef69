"""Audit events in the admin: visible to those with the view permission, never editable."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from audit.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["id", "at", "actor_name", "kind", "object_repr", "host_name", "profile_name"]
    list_filter = ["kind"]
    search_fields = ["actor_name", "object_repr", "host_name", "profile_name", "kind"]
    date_hierarchy = "at"
    ordering = ["-id"]
    show_full_result_count = False
    # The actor may have been deleted since (no FK constraint): show the stored id and name.
    exclude = ["actor"]

    def get_readonly_fields(self, request: HttpRequest, obj: AuditEvent | None = None) -> list:
        return [field.attname for field in AuditEvent._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False
