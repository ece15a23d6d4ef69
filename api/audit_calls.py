"""Every API call in the audit history, with the token's name (docs/api.md, "What is
audited"): each write (a POST: a version, an import, a lint, a deploy request), refused
or not, as one `api.call` event; reads as one `api.read` event per token per hour, the
first of the hour, so a CI job polling its job every few seconds neither buries the
history nor takes the chain's write lock once a poll."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response

from api.authentication import token_of
from api.models import ApiToken
from audit.models import AuditKind
from audit.services import record

READ_AUDIT_EVERY = timedelta(hours=1)
LAST_USED_EVERY = timedelta(minutes=1)
_PATH_LIMIT = 300


def _credential(request: Request) -> tuple[str, str]:
    token = token_of(request)
    return (token.name, token.scope) if token else ("session", "")


def audit_call(request: Request, response: Response, what: dict[str, object]) -> None:
    """A write call: who, with which token, what, and how it ended."""
    user = request.user if request.user and request.user.is_authenticated else None
    credential, scope = _credential(request)
    payload: dict[str, object] = {
        "credential": credential,
        "scope": scope,
        "method": request.method or "",
        "path": request.path[:_PATH_LIMIT],
        "status": response.status_code,
        **what,
    }
    record(kind=AuditKind.API_CALL, actor=user, object_type="api", payload=payload)
    _touch(request)


def audit_read(request: Request) -> None:
    """A read: the token's last use (at most once a minute), and the hour's first read
    in the history. Decided on the row authentication already loaded: most reads write
    nothing at all."""
    token = token_of(request)
    if token is None:
        return
    now = timezone.now()
    last = token.last_read_audited_at
    if last is None or now - last >= READ_AUDIT_EVERY:
        won = ApiToken.objects.filter(pk=token.pk, last_read_audited_at=last).update(
            last_read_audited_at=now, last_used_at=now
        )
        if won:
            record(
                kind=AuditKind.API_READ,
                actor=token.user,
                object_type="api",
                payload={
                    "credential": token.name,
                    "scope": token.scope,
                    "path": request.path[:_PATH_LIMIT],
                    "note": "the first read of this token this hour; later ones are not recorded",
                },
            )
        return
    _touch(request)


def _touch(request: Request) -> None:
    token = token_of(request)
    now = timezone.now()
    if token is not None and (
        token.last_used_at is None or now - token.last_used_at >= LAST_USED_EVERY
    ):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
