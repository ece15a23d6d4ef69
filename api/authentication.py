"""`Authorization: Bearer sa_…`: the DRF authentication class of the API's tokens.

A refused token gets 401 with the reason (unknown, revoked, expired, inactive user):
a CI log then says what to fix. Only the API's views use it; the web pages (approval
among them) authenticate by session alone, so a token never reaches them
(docs/api.md, "Approval stays in the web UI")."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from api.models import ApiToken
from api.tokens import token_for_secret

KEYWORD = b"bearer"


class TokenAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[AbstractBaseUser, ApiToken] | None:
        words = get_authorization_header(request).split()
        if not words or words[0].lower() != KEYWORD:
            return None
        if len(words) != 2:
            raise AuthenticationFailed("Write the header as “Authorization: Bearer TOKEN”.")
        try:
            secret = words[1].decode("ascii")
        except UnicodeDecodeError as exc:
            raise AuthenticationFailed("A token is ASCII.") from exc
        token = token_for_secret(secret)
        if token is None:
            raise AuthenticationFailed("Unknown token.")
        if token.revoked_at is not None:
            raise AuthenticationFailed(f"The token “{token.name}” was revoked.")
        if token.expired:
            raise AuthenticationFailed(
                f"The token “{token.name}” expired on {token.expires_at:%Y-%m-%d %H:%M} UTC."
            )
        if not token.user.is_active:
            raise AuthenticationFailed("The token's user is not active.")
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="specadmin"'


def token_of(request: Any) -> ApiToken | None:
    """The token a request came with (None: a browser session)."""
    auth = getattr(request, "auth", None)
    return auth if isinstance(auth, ApiToken) else None


class TokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """The token in the OpenAPI schema: HTTP bearer."""

    target_class = "api.authentication.TokenAuthentication"
    name = "token"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "An API token (sa_…)"}
