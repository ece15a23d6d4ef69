"""API tokens in Django's admin: readable, revocable (the hash is never shown)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from api.models import ApiToken
from api.tokens import token_revoke


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "scope", "prefix", "expires_at", "revoked_at", "last_used_at")
    list_filter = ("scope",)
    search_fields = ("name", "user__username", "prefix")
    exclude = ("key_sha256",)
    readonly_fields = [f.name for f in ApiToken._meta.fields if f.name != "key_sha256"]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a token is made by its owner, on the tokens page, and shown once

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoked, never deleted: the history names it

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        for token in queryset:
            token_revoke(token=token, actor=request.user)
