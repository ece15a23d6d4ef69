"""Fixtures of the notification tests: a real SMTP server and a real webhook receiver on
loopback ports (tests/doubles/), Django's SMTP backend pointed at the first, fast retries,
and the people and host of the deploy tests (olga requests; alice and bob approve; ada is
an admin; vic only looks)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.deploys.conftest import (  # noqa: F401  (fixtures)
    enqueued,
    host,
    make_request,
    on_host,
    people,
    profile,
    version,
)
from tests.deploys.helpers import People
from tests.deploys.qcluster_support import sqlite_orm, start_clusters  # noqa: F401  (fixtures)
from tests.doubles.smtp_sink import SmtpSink
from tests.doubles.webhook_receiver import WebhookReceiver


@pytest.fixture
def sink(settings: Any) -> Iterator[SmtpSink]:
    with SmtpSink() as running:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST = "127.0.0.1"
        settings.EMAIL_PORT = running.port
        settings.EMAIL_USE_TLS = False
        settings.EMAIL_HOST_USER = ""
        settings.EMAIL_HOST_PASSWORD = ""
        yield running


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as running:
        yield running


@pytest.fixture(autouse=True)
def fast_retries(settings: Any) -> None:
    """Seconds where an operator has minutes: the same rules, run quickly."""
    settings.NOTIFY_TIMEOUT_S = 2
    settings.NOTIFY_BACKOFF_S = 0.2
    settings.NOTIFY_MAX_BACKOFF_S = 5
    settings.NOTIFY_MAX_ATTEMPTS = 4


@pytest.fixture
def mailed(people: People) -> People:  # noqa: F811 (the fixture imported above)
    """Everyone has an e-mail address."""
    for user in vars(people).values():
        user.email = f"{user.username}@example.org"
        user.save(update_fields=["email"])
    return people
