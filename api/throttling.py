"""Rates per token (or per user, for a session): reads and writes apart, so a CI job
polling a job cannot use up its own deploy request. DRF's throttles keep their counts
in Django's cache; specadmin's default cache is per process (docs/api.md, "Limits")."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from api.authentication import token_of


class _PerCaller(SimpleRateThrottle):
    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if not self._applies(request):
            return None
        token = token_of(request)
        who = f"token-{token.pk}" if token else f"user-{request.user.pk}"
        return self.cache_format % {"scope": self.scope, "ident": who}

    def _applies(self, request: Request) -> bool:
        raise NotImplementedError


class ReadRate(_PerCaller):
    scope = "api_read"

    def _applies(self, request: Request) -> bool:
        return request.method in SAFE_METHODS


class WriteRate(_PerCaller):
    scope = "api_write"

    def _applies(self, request: Request) -> bool:
        return request.method not in SAFE_METHODS
