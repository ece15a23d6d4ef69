"""Host groups in Django's admin (saved through `fleet.services`, so audited); rollouts
read-only (they change only through their services)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from fleet.models import HostGroup, Rollout
from fleet.services import host_group_delete, host_group_save
from units.admin import ReadOnlyAdmin


@admin.register(HostGroup)
class HostGroupAdmin(admin.ModelAdmin):
    list_display = ("name", "description", "host_count")
    search_fields = ("name", "hosts__name")
    filter_horizontal = ("hosts",)

    @admin.display(description="hosts")
    def host_count(self, group: HostGroup) -> int:
        return group.hosts.count()

    def save_model(self, request: HttpRequest, obj: HostGroup, form: Any, change: bool) -> None:
        # The hosts come from the form's cleaned data; save_related would set them again.
        host_group_save(
            actor=request.user,
            name=obj.name,
            description=obj.description,
            hosts=form.cleaned_data.get("hosts", []),
            group=HostGroup.objects.get(pk=obj.pk) if change else None,
        )
        saved = HostGroup.objects.get(name=obj.name)
        obj.pk = saved.pk

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """The hosts were set (and audited) by save_model."""

    def delete_model(self, request: HttpRequest, obj: HostGroup) -> None:
        host_group_delete(actor=request.user, group=obj)


@admin.register(Rollout)
class RolloutAdmin(ReadOnlyAdmin):
    list_display = ("pk", "profile_version", "status", "requested_by", "requested_at")
    list_filter = ("status",)
