"""Making, finding and revoking API tokens (docs/api.md, "Tokens").

Services, like the rest of specadmin's: they check who may do it and write the audit
event in the same transaction as the change."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from api.models import ApiToken
from audit.models import AuditKind
from audit.services import record

PREFIX = "sa_"
MANAGE_ANY = "api.change_apitoken"  # the admin role: revoke anyone's token
MAX_DAYS = 366
DEFAULT_DAYS = 90
MAX_NAME = 100


@dataclass(frozen=True)
class NewToken:
    token: ApiToken
    secret: str  # shown once, never stored


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _check_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise ValidationError({"name": ["Give the token a name (what uses it, e.g. “ci-main”)."]})
    if len(name) > MAX_NAME:
        raise ValidationError({"name": [f"At most {MAX_NAME} characters."]})
    if any(ord(c) < 0x20 or c == "\x7f" for c in name):
        raise ValidationError({"name": ["The name cannot contain control characters."]})
    return name


def _check_days(days: int) -> int:
    if not 1 <= days <= MAX_DAYS:
        raise ValidationError({"days": [f"A token lasts 1 to {MAX_DAYS} days."]})
    return days


def token_create(
    *, user: AbstractBaseUser, name: str, scope: str, days: int = DEFAULT_DAYS
) -> NewToken:
    """A token for `user` (made by that user: a token acts as its person, so nobody
    makes one for someone else)."""
    if not user.is_authenticated or not user.is_active:
        raise PermissionDenied("Log in to make a token.")
    name = _check_name(name)
    if scope not in ApiToken.Scope.values:
        raise ValidationError(
            {"scope": [f"The scope is one of {', '.join(ApiToken.Scope.values)}."]}
        )
    days = _check_days(days)
    secret = PREFIX + secrets.token_urlsafe(32)
    try:
        with transaction.atomic():
            token = ApiToken.objects.create(
                user=user,
                name=name,
                scope=scope,
                key_sha256=digest(secret),
                prefix=secret[:10],
                expires_at=timezone.now() + timedelta(days=days),
            )
            _audit(AuditKind.API_TOKEN_CREATED, user, token)
    except IntegrityError as exc:
        raise ValidationError({"name": [f"You already have a token named “{name}”."]}) from exc
    return NewToken(token, secret)


def token_revoke(*, token: ApiToken, actor: AbstractBaseUser) -> ApiToken:
    """Revoke at once (its next call is refused); its own user or an admin."""
    if actor.pk != token.user_id and not actor.has_perm(MANAGE_ANY):
        raise PermissionDenied("Only its owner or an admin may revoke a token.")
    with transaction.atomic():
        done = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now(), revoked_by=actor
        )
        token.refresh_from_db()
        if done:
            _audit(AuditKind.API_TOKEN_REVOKED, actor, token)
    return token


def token_for_secret(secret: str) -> ApiToken | None:
    """The token this secret is, usable or not (the caller says why not)."""
    if not secret.startswith(PREFIX) or len(secret) > 200:
        return None
    return ApiToken.objects.select_related("user").filter(key_sha256=digest(secret)).first()


def _audit(kind: str, actor: AbstractBaseUser, token: ApiToken) -> None:
    record(
        kind=kind,
        actor=actor,
        obj=token,
        object_repr=f"{token.name} of {token.user.get_username()}",
        payload={
            "credential": token.name,
            "owner": token.user.get_username(),
            "scope": token.scope,
            "expires_at": token.expires_at.isoformat(),
        },
    )
