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
        if not self._applies(request, view):
            return None
        token = token_of(request)
        who = f"token-{token.pk}" if token else f"user-{request.user.pk}"
        return self.cache_format % {"scope": self.scope, "ident": who}

    def _applies(self, request: Request, view: Any) -> bool:
        raise NotImplementedError


def _reads(request: Request, view: Any) -> bool:
    """A read: a safe method, or a POST that writes nothing (lint: a repository's units
    are linted one call each)."""
    return request.method in SAFE_METHODS or getattr(view, "read_only_post", False)


class ReadRate(_PerCaller):
    scope = "api_read"

    def _applies(self, request: Request, view: Any) -> bool:
        return _reads(request, view)


class WriteRate(_PerCaller):
    scope = "api_write"

    def _applies(self, request: Request, view: Any) -> bool:
        return not _reads(request, view)
