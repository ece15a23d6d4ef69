"""Fixtures of the API tests: the deploy tests' people (olga requests, alice and bob
approve, ada is an admin, vic only looks), a pinned host whose unit reads come from
`on_host`, and what approving hands to the job layer (`enqueued`); tokens made through
the real service, calls through the real URLs."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from rest_framework.test import APIClient

from api.tokens import token_create
from tests.deploys.conftest import (  # noqa: F401  (fixtures shared with the deploy tests)
    enqueued,
    host,
    on_host,
    people,
    profile,
    trial_side,
    version,
)


@pytest.fixture(autouse=True)
def _fresh_rates() -> None:
    """Throttle counts live in the cache: each test starts with none."""
    cache.clear()


@pytest.fixture
def token() -> Callable[..., str]:
    """`token(user, scope="request", days=30)`: a new token's secret."""
    made = 0

    def make(user: AbstractBaseUser, scope: str = "request", days: int = 30) -> str:
        nonlocal made
        made += 1
        return token_create(user=user, name=f"ci-{made}", scope=scope, days=days).secret

    return make


@pytest.fixture
def client_for(token: Callable[..., str]) -> Callable[..., APIClient]:
    """`client_for(user, scope)`: an APIClient that sends a fresh token of `user`."""

    def make(user: AbstractBaseUser, scope: str = "request") -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token(user, scope)}")
        return client

    return make
