"""The account pages (Django's `django.contrib.auth.urls`), with password reset by e-mail
only where a mail server is configured.

Django's reset form sends its mail through `EMAIL_BACKEND`, by default SMTP on
localhost:25: on an install without a mail server every reset request ended in a server
error and a traceback. Unless `PASSWORD_RESET_BY_EMAIL` is set (settings: `EMAIL_HOST` or
`EMAIL_BACKEND` given), the reset pages say that reset by e-mail is off and what to do
instead, and nothing tries to send mail. Decided per request, so the setting is the only
switch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import urls as auth_urls
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import URLPattern

RESET_NAMES = frozenset(
    {"password_reset", "password_reset_done", "password_reset_confirm", "password_reset_complete"}
)


def reset_by_email() -> bool:
    return bool(getattr(settings, "PASSWORD_RESET_BY_EMAIL", False))


def reset_unavailable(request: HttpRequest) -> HttpResponse:
    """What the reset pages answer without a mail server (404: there is no such page)."""
    return render(request, "registration/password_reset_unavailable.html", status=404)


def _only_with_mail(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not reset_by_email():
            return reset_unavailable(request)
        return view(request, *args, **kwargs)

    guarded.__wrapped__ = view  # type: ignore[attr-defined]
    return guarded


def account_patterns() -> list[URLPattern]:
    """Django's account routes, the reset ones guarded by `reset_by_email()`."""
    patterns = []
    for pattern in auth_urls.urlpatterns:
        if pattern.name in RESET_NAMES:
            pattern = URLPattern(
                pattern.pattern,
                _only_with_mail(pattern.callback),
                pattern.default_args,
                pattern.name,
            )
        patterns.append(pattern)
    return patterns


__all__ = ["account_patterns", "reset_by_email", "reset_unavailable"]
