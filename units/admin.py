"""Django admin for profiles and versions: for looking, not for editing.

Saving a profile through the admin would skip validation, the lint gate and the version
history, so profiles are read-only here (edit them on the profile pages) and the only
action is archiving through the service. Versions are immutable everywhere.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse

from units import services
from units.models import ProfileVersion, ServiceProfile


class ReadOnlyAdmin(admin.ModelAdmin):
    """View-only: every change goes through the app's services (versions, lint gate,
    permission checks, audit events), which saving in the admin would skip."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ServiceProfile)
class ServiceProfileAdmin(ReadOnlyAdmin):
    list_display = (
        "name",
        "model",
        "spec_method",
        "target_vllm_version",
        "tensor_parallel_size",
        "archived",
        "updated_at",
    )
    list_filter = ("archived", "spec_method", "target_vllm_version")
    search_fields = ("name", "description", "model")
    list_select_related = False
    actions = ("archive",)

    def view_on_site(self, obj: ServiceProfile) -> str:
        return reverse("units:detail", args=[obj.pk])

    def get_actions(self, request: HttpRequest) -> dict:
        # Actions need change permission by default; archiving is the one write offered.
        actions = super().get_actions(request)
        if not request.user.has_perm("units.change_serviceprofile"):
            actions.pop("archive", None)
        return actions

    @admin.action(description="Archive selected profiles (history is kept)")
    def archive(self, request: HttpRequest, queryset: QuerySet[ServiceProfile]) -> None:
        count = 0
        for profile in queryset:
            services.profile_archive(profile=profile, archived_by=request.user)
            count += 1
        self.message_user(request, f"Archived {count} profile(s).", messages.SUCCESS)


@admin.register(ProfileVersion)
class ProfileVersionAdmin(ReadOnlyAdmin):
    list_display = ("profile", "number", "created_by", "created_at", "comment")
    list_filter = ("created_at",)
    search_fields = ("profile__name", "comment")
    list_select_related = ("profile", "created_by")
    raw_id_fields = ("profile",)

    def view_on_site(self, obj: ProfileVersion) -> str:
        return reverse("units:version", args=[obj.profile_id, obj.number])
