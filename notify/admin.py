"""The outbox in Django's admin: every notification with every delivery try, read-only
(what was sent is history), and an action to try dead or failing ones again now."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from notify import queue
from notify.models import DeliveryAttempt, EmailSetting, HostMute, Notification, Webhook


class DeliveryAttemptInline(admin.TabularInline):
    model = DeliveryAttempt
    extra = 0
    can_delete = False
    fields = ("number", "started_at", "duration_ms", "status", "error")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "created_at",
        "event",
        "channel",
        "address",
        "state",
        "attempts",
        "next_attempt_at",
        "delivered_at",
        "last_error",
    )
    list_filter = ("state", "event", "channel")
    search_fields = ("address", "subject", "last_error")
    # Every field read-only: what was queued and tried is history.
    readonly_fields = [f.name for f in Notification._meta.fields]
    inlines = [DeliveryAttemptInline]
    actions = ["try_again_now"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(
        description="Try again now (dead ones get their tries back)",
        permissions=("change",),
    )
    def try_again_now(self, request: HttpRequest, queryset: QuerySet[Notification]) -> None:
        with transaction.atomic():
            count = queryset.filter(
                state__in=[Notification.State.DEAD, Notification.State.PENDING]
            ).update(state=Notification.State.PENDING, attempts=0, next_attempt_at=timezone.now())
            transaction.on_commit(queue.kick_delivery)
        self.message_user(request, f"{count} notification(s) queued again.", messages.SUCCESS)


@admin.register(DeliveryAttempt)
class DeliveryAttemptAdmin(admin.ModelAdmin):
    list_display = ("notification", "number", "started_at", "duration_ms", "status", "error")
    list_filter = ("status",)
    readonly_fields = [f.name for f in DeliveryAttempt._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    list_display = ("url", "owner", "host", "slack", "created_at")
    list_filter = ("slack",)


admin.site.register(EmailSetting)
admin.site.register(HostMute)
