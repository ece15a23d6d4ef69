"""API tokens: stored hashed, shown once, scoped, expiring, revocable, named in the
history; the tokens page for their owner and for an admin."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from api.models import ApiToken
from api.tokens import token_create
from audit.models import AuditEvent
from tests.deploys.helpers import People

pytestmark = pytest.mark.django_db

PROFILES = "/api/v1/profiles/"


def _bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_a_token_made_on_its_page_is_shown_once_and_stored_only_as_its_hash(
    people: People,
) -> None:
    page = Client()
    page.force_login(people.olga)
    made = page.post(reverse("api:tokens"), {"name": "ci-main", "scope": "request", "days": 30})
    assert made.status_code == 200 and made["Cache-Control"] == "no-store"
    secret = made.context["new_secret"]
    assert secret.startswith("sa_") and secret in made.content.decode()
    stored = ApiToken.objects.get(name="ci-main")
    assert stored.key_sha256 == hashlib.sha256(secret.encode()).hexdigest()
    columns = [str(getattr(stored, f.attname)) for f in ApiToken._meta.fields]
    assert not any(secret in value for value in columns)
    assert stored.prefix == secret[:10]
    again = page.get(reverse("api:tokens"))
    assert secret not in again.content.decode() and stored.prefix in again.content.decode()
    assert _bearer(secret).get(PROFILES).status_code == 200


def test_a_read_token_reads_but_may_not_write(
    people: People, client_for: Callable[..., APIClient], profile: object
) -> None:
    reader = client_for(people.olga, "read")
    assert reader.get(PROFILES).status_code == 200
    refused = reader.post(
        f"{PROFILES}vllm-kimi-k25-int4/versions/", {"data": {"port": 9001}}, format="json"
    )
    assert refused.status_code == 403 and "scope is “read”" in refused.json()["detail"]
    # Lint writes nothing: a read token may lint.
    linted = reader.post(
        "/api/v1/lint/", {"text": "[Service]\nExecStart=/bin/true\n"}, format="json"
    )
    assert linted.status_code == 200


def test_an_expired_token_is_refused_with_the_reason(people: People) -> None:
    made = token_create(user=people.olga, name="old", scope="read", days=1)
    ApiToken.objects.filter(pk=made.token.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    answer = _bearer(made.secret).get(PROFILES)
    assert answer.status_code == 401 and "expired" in answer.json()["detail"]


def test_a_revoked_token_is_refused_at_once_and_only_its_owner_or_an_admin_revokes_it(
    people: People,
) -> None:
    made = token_create(user=people.olga, name="ci", scope="request")
    assert _bearer(made.secret).get(PROFILES).status_code == 200
    other = Client()
    other.force_login(people.alice)
    assert other.post(reverse("api:token_revoke", args=[made.token.pk])).status_code == 403
    admin = Client()
    admin.force_login(people.ada)
    assert made.token.name in admin.get(reverse("api:tokens")).content.decode()
    assert admin.post(reverse("api:token_revoke", args=[made.token.pk])).status_code == 302
    answer = _bearer(made.secret).get(PROFILES)
    assert answer.status_code == 401 and "revoked" in answer.json()["detail"]
    revoked = AuditEvent.objects.get(kind="api.token_revoked")
    assert revoked.actor_name == "ada" and revoked.payload["credential"] == "ci"


@pytest.mark.parametrize(
    "header",
    [
        "Bearer sa_not-a-token",
        "Bearer",
        "Bearer a b",
        "Bearer sa_\u00e9t\u00e9",
        "Bearer " + "x" * 5000,
    ],
)
def test_a_bad_token_gets_401_never_a_server_error(people: People, header: str) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    answer = client.get(PROFILES)
    assert answer.status_code == 401, answer.content
    assert answer["WWW-Authenticate"].startswith("Bearer")


def test_tokens_need_a_name_a_scope_and_a_bounded_lifetime(people: People) -> None:
    page = Client()
    page.force_login(people.olga)
    for data in (
        {"name": "", "scope": "read", "days": 30},
        {"name": "x", "scope": "admin", "days": 30},
        {"name": "x", "scope": "read", "days": 0},
        {"name": "x", "scope": "read", "days": 100000},
    ):
        answer = page.post(reverse("api:tokens"), data)
        assert answer.status_code == 200 and not answer.context["new_secret"], data
    # a NUL character is refused before the form (specadmin.nul_characters)
    answer = page.post(reverse("api:tokens"), {"name": "a\x00b", "scope": "read", "days": 3})
    assert answer.status_code == 400 and "NUL character" in answer.content.decode()
    token_create(user=people.olga, name="dup", scope="read")
    twice = page.post(reverse("api:tokens"), {"name": "dup", "scope": "read", "days": 3})
    assert "already have a token" in twice.content.decode()
    assert ApiToken.objects.count() == 1


def test_making_a_token_is_in_the_history_with_its_name_but_never_its_secret(
    people: People,
) -> None:
    made = token_create(user=people.olga, name="ci-main", scope="request")
    event = AuditEvent.objects.get(kind="api.token_created")
    assert event.payload["credential"] == "ci-main" and event.actor_name == "olga"
    assert made.secret not in str(event.payload)


def test_djangos_admin_lists_tokens_without_their_hash_and_revokes_them(people: People) -> None:
    made = token_create(user=people.olga, name="ci", scope="read")
    boss = get_user_model().objects.create_superuser("boss")
    admin = Client()
    admin.force_login(boss)
    listing = admin.get(reverse("admin:api_apitoken_changelist"))
    assert listing.status_code == 200 and "ci" in listing.content.decode()
    detail = admin.get(reverse("admin:api_apitoken_change", args=[made.token.pk])).content.decode()
    assert made.token.key_sha256 not in detail
    admin.post(
        reverse("admin:api_apitoken_changelist"),
        {"action": "revoke", "_selected_action": [made.token.pk]},
    )
    assert _bearer(made.secret).get(PROFILES).status_code == 401
    assert AuditEvent.objects.get(kind="api.token_revoked").actor_name == "boss"
