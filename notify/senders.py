"""Sending one notification: by Django's e-mail backend, or an HTTP POST of JSON.

Each raises `SendFailed` with a short reason when the message was not accepted; a timeout
bounds every wait (conf.timeout_s). Webhook redirects are not followed: a receiver that
moved says so in the error instead of the body going somewhere else
(docs/security.md, "Webhooks").
"""

from __future__ import annotations

import json
import smtplib
import socket
import urllib.error
import urllib.request
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage, get_connection

from notify import conf
from notify.models import Channel, Notification

# A receiver's answer is read (so the connection ends cleanly) up to this much.
MAX_ANSWER_BYTES = 65_536
ERROR_BODY_CHARS = 200
USER_AGENT = "specadmin-notify/1"


class SendFailed(Exception):
    """The receiver did not take the message; the message says why."""


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(
        self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> None:
        raise SendFailed(f"HTTP {code}: the receiver redirects to {newurl[:300]}; not followed")


_OPENER = urllib.request.build_opener(_NoRedirects())


def body(notification: Notification) -> dict[str, Any]:
    """What a webhook receives: specadmin's JSON, or Slack's `{"text": …}`."""
    link = notification.payload.get("url", "") if isinstance(notification.payload, dict) else ""
    if notification.channel == Channel.SLACK:
        lines = [notification.subject, notification.text]
        if link:
            lines.append(f"{conf.site_url()}{link}")
        return {"text": "\n".join(line for line in lines if line)}
    return {
        "id": notification.pk,
        "event": notification.event,
        "subject": notification.subject,
        "text": notification.text,
        "host": notification.host.name if notification.host else None,
        "created_at": notification.created_at.isoformat(),
        "url": f"{conf.site_url()}{link}" if link else None,
        "payload": notification.payload,
    }


def send_webhook(notification: Notification) -> None:
    data = json.dumps(body(notification)).encode("utf-8")
    request = urllib.request.Request(
        notification.address,
        data=data,
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": USER_AGENT},
    )
    try:
        with _OPENER.open(request, timeout=conf.timeout_s()) as answer:
            answer.read(MAX_ANSWER_BYTES)
    except urllib.error.HTTPError as exc:
        text = exc.read(ERROR_BODY_CHARS).decode("utf-8", "replace").strip()
        raise SendFailed(f"HTTP {exc.code} {exc.reason}" + (f": {text}" if text else "")) from None
    except TimeoutError:
        raise SendFailed(f"no answer within {conf.timeout_s():g} s") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, (TimeoutError, socket.timeout)):
            raise SendFailed(f"no answer within {conf.timeout_s():g} s") from None
        raise SendFailed(f"could not reach it: {reason}") from None
    except OSError as exc:
        raise SendFailed(f"{type(exc).__name__}: {exc}") from None


def send_email(notification: Notification) -> None:
    text = notification.text
    link = notification.payload.get("url", "") if isinstance(notification.payload, dict) else ""
    if link:
        text = f"{text}\n\n{conf.site_url()}{link}"
    connection = get_connection(timeout=conf.timeout_s())
    message = EmailMessage(
        subject=f"[specadmin] {notification.subject}",
        body=text,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[notification.address],
        connection=connection,
    )
    try:
        sent = message.send()
    except TimeoutError:
        raise SendFailed(f"the mail server did not answer within {conf.timeout_s():g} s") from None
    except smtplib.SMTPServerDisconnected as exc:
        # smtplib reports a greeting that never came as a disconnect "…: timed out".
        if "timed out" not in str(exc):
            raise SendFailed(f"{type(exc).__name__}: {exc}") from None
        raise SendFailed(f"the mail server did not answer within {conf.timeout_s():g} s") from None
    except Exception as exc:  # smtplib's errors, OSError, a backend's own
        raise SendFailed(f"{type(exc).__name__}: {exc}") from None
    if not sent:
        raise SendFailed("the e-mail backend sent nothing")


def send(notification: Notification) -> None:
    """Deliver `notification` once; raises SendFailed."""
    if notification.channel == Channel.EMAIL:
        send_email(notification)
    else:
        send_webhook(notification)


__all__ = ["SendFailed", "body", "send"]
