"""Writes: queue notifications (the outbox) and change a person's settings.

`enqueue` only writes rows, in the caller's transaction, and asks for a delivery run once
that transaction commits: nothing is sent from the caller, so a dead webhook or mail server
never slows or fails a job, and an event is queued exactly when the change it reports is
committed (docs/notifications.md, "The outbox").
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.core.validators import URLValidator
from django.db import transaction
from django.utils import timezone

from audit.models import AuditKind
from audit.services import record
from deploys.models import Host
from hostops.channel.bounds import clip_json, clip_text
from notify import queue
from notify.events import Event
from notify.models import (
    ADDRESS_CHARS,
    PAYLOAD_BYTES,
    SUBJECT_CHARS,
    TEXT_CHARS,
    Channel,
    EmailSetting,
    HostMute,
    Notification,
    Webhook,
)
from notify.selectors import muting

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# Each string of a payload; the whole payload is then held to PAYLOAD_BYTES.
PAYLOAD_STRING_CHARS = 2000
VIEW_HOST = "deploys.view_host"


def one_line(text: str, limit: int) -> str:
    """`text` on one line (an e-mail subject is a header: a line break there is refused by
    Django's mail as a header injection), cut to `limit` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def bounded_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """`payload` as plain JSON, each string clipped, and at most PAYLOAD_BYTES in all
    (beyond that only its keys are kept, and `clipped` says so)."""
    plain: dict[str, Any] = clip_json(
        json.loads(json.dumps(payload, cls=DjangoJSONEncoder, default=str)), PAYLOAD_STRING_CHARS
    )
    size = len(json.dumps(plain).encode("utf-8"))
    if size <= PAYLOAD_BYTES:
        return plain
    return {"clipped": f"the payload was {size:,} bytes", "keys": sorted(plain)[:50]}


def enqueue(
    *,
    event: str,
    subject: str,
    text: str,
    payload: dict[str, Any],
    users: Iterable[Any] = (),
    host: Host | None = None,
) -> list[Notification]:
    """Queue `event` for `users` (their e-mail and own webhooks, as their settings say; not
    for those who muted `host`) and for the webhooks added for `host`. Writes rows in the
    caller's transaction; delivery starts when it commits. Returns the rows written."""
    if event not in Event.values:
        raise ValueError(f"{event!r} is not a notification event")
    common = {
        "event": event,
        "subject": one_line(subject, SUBJECT_CHARS),
        "text": clip_text(text, TEXT_CHARS),
        "payload": bounded_payload(payload),
        "host": host,
        "next_attempt_at": timezone.now(),
    }
    rows = [
        Notification(channel=channel, address=address, user=user, **common)
        for channel, address, user in _addresses(event, users, host)
    ]
    if rows:
        Notification.objects.bulk_create(rows)
        transaction.on_commit(queue.kick_delivery)
    return rows


def _addresses(event: str, users: Iterable[Any], host: Host | None) -> list[tuple[str, str, Any]]:
    """(channel, address, whose) for each place `event` goes, each place once."""
    people = [u for u in users if getattr(u, "is_active", True)]
    muted = muting(users=people, host=host)
    people = [u for u in people if u.pk not in muted]
    off = set(
        EmailSetting.objects.filter(user__in=people, event=event, enabled=False).values_list(
            "user_id", flat=True
        )
    )
    hooks: list[Webhook] = []
    places: list[tuple[str, str, Any]] = []
    for person in people:
        if person.email and person.pk not in off:
            places.append((Channel.EMAIL, person.email, person))
        hooks.extend(Webhook.objects.filter(owner=person, host__isnull=True))
    if host is not None:
        hooks.extend(Webhook.objects.filter(host=host, owner__is_active=True))
    for hook in hooks:
        if event in hook.events:
            places.append((Channel.SLACK if hook.slack else Channel.WEBHOOK, hook.url, hook.owner))
    seen: set[tuple[str, str]] = set()
    unique = []
    for channel, address, whose in places:
        if (channel, address) not in seen:
            seen.add((channel, address))
            unique.append((channel, address, whose))
    return unique


# -- a person's settings ---------------------------------------------------------------


def check_webhook_url(url: str) -> str:
    """`url` if specadmin will POST to it, else a ValidationError saying why: http or https
    only, with a host name, no user name or password in it (they would be shown on pages
    and in the admin), at most ADDRESS_CHARS long (docs/security.md, "Webhooks")."""
    url = url.strip()
    if len(url) > ADDRESS_CHARS:
        raise ValidationError(f"The URL is {len(url):,} characters; at most {ADDRESS_CHARS:,}.")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        shown = parts.scheme or "none"
        raise ValidationError(
            f"Webhooks are sent over http or https only; this URL's scheme is {shown}."
        )
    if parts.username is not None or parts.password is not None:
        raise ValidationError(
            "Put no user name or password in the URL: it is shown on pages. A token in the "
            "path or query (as Slack's webhook URLs have) is kept as it is."
        )
    try:
        URLValidator(schemes=["http", "https"])(url)
    except ValidationError:
        raise ValidationError(f"{url!r} is not a valid http(s) URL with a host name.") from None
    return url


def check_events(events: Sequence[str]) -> list[str]:
    unknown = sorted(set(events) - set(Event.values))
    if unknown:
        raise ValidationError(f"Unknown event kinds: {', '.join(unknown)}.")
    if not events:
        raise ValidationError("Choose at least one kind of event for the webhook.")
    return [e for e in Event.values if e in events]


@transaction.atomic
def set_email_events(*, user: User, events: Iterable[str]) -> None:
    """`user` gets e-mail for `events` and for no other kind (audited: who hears what)."""
    wanted = set(events)
    for event in Event.values:
        EmailSetting.objects.update_or_create(
            user=user, event=event, defaults={"enabled": event in wanted}
        )
    record(
        kind=AuditKind.NOTIFY_SETTINGS_CHANGED,
        actor=user,
        obj=user,
        payload={"email_events": [e for e in Event.values if e in wanted]},
    )


def webhook_add(
    *, owner: User, url: str, slack: bool, events: Sequence[str], host: Host | None = None
) -> Webhook:
    """A webhook for `owner` (their own events), or for `host`'s events: only someone who
    may see hosts adds one for a host."""
    checked = check_webhook_url(url)
    kinds = check_events(events)
    if host is not None and not owner.has_perm(VIEW_HOST):
        raise ValidationError({"host": ["You may not see hosts, so you cannot follow one."]})
    with transaction.atomic():
        hook = Webhook.objects.create(
            owner=owner, url=checked, slack=slack, events=kinds, host=host
        )
        record(
            kind=AuditKind.NOTIFY_WEBHOOK_ADDED,
            actor=owner,
            obj=hook,
            host_name=host.name if host else "",
            payload={"url": checked, "slack": slack, "events": kinds},
        )
    return hook


@transaction.atomic
def webhook_delete(*, owner: User, webhook_id: int) -> bool:
    """Remove one of `owner`'s webhooks (someone else's: nothing happens)."""
    hook = Webhook.objects.filter(owner=owner, pk=webhook_id).select_related("host").first()
    if hook is None:
        return False
    record(
        kind=AuditKind.NOTIFY_WEBHOOK_REMOVED,
        actor=owner,
        obj=hook,
        host_name=hook.host.name if hook.host else "",
        payload={"url": hook.url},
    )
    hook.delete()
    return True


@transaction.atomic
def set_muted_hosts(*, user: User, hosts: Iterable[Host]) -> None:
    """`user` hears nothing about exactly these hosts."""
    chosen = list(hosts)
    keep = {h.pk for h in chosen}
    HostMute.objects.filter(user=user).exclude(host_id__in=keep).delete()
    for host_id in keep:
        HostMute.objects.get_or_create(user=user, host_id=host_id)
    record(
        kind=AuditKind.NOTIFY_SETTINGS_CHANGED,
        actor=user,
        obj=user,
        payload={"muted_hosts": sorted(h.name for h in chosen)},
    )


__all__ = [
    "bounded_payload",
    "check_webhook_url",
    "enqueue",
    "set_email_events",
    "set_muted_hosts",
    "webhook_add",
    "webhook_delete",
]
