"""The browser plugin (tests/browser.py) is loaded for every test session; what it needs
for its own tests must not leak into the others."""

from __future__ import annotations

import asyncio

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import SynchronousOnlyOperation


@pytest.mark.django_db
def test_outside_the_browser_tests_the_database_is_refused_inside_an_event_loop() -> None:
    # As in a qcluster worker: an ORM call from async code is a bug Django must report
    # (https://docs.djangoproject.com/en/stable/topics/async/#async-safety).
    async def query() -> bool:
        return User.objects.exists()

    with pytest.raises(SynchronousOnlyOperation):
        asyncio.run(query())
