"""Named users for audit tests: alice operates, bob approves, vera only views history."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from audit.keys import forget_cached_keys


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Users here log in with force_login; PBKDF2's million rounds would only cost time."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _audit_urls(settings):
    """Tests use /history/ whether or not specadmin/urls.py mounts audit.urls yet."""
    settings.ROOT_URLCONF = "tests.audit.urls"


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", password="pw-alice")


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user("bob", password="pw-bob")


@pytest.fixture
def vera(django_user_model):
    """A viewer: may read history, nothing else."""
    user = django_user_model.objects.create_user("vera", password="pw-vera")
    user.user_permissions.add(Permission.objects.get(codename="view_auditevent"))
    return user


@pytest.fixture
def key_file(settings, tmp_path):
    """An audit key file of this test's own, not created yet (as on a new server)."""
    settings.AUDIT_KEY_FILE = tmp_path / "keys" / "audit.key"
    forget_cached_keys()
    yield settings.AUDIT_KEY_FILE
    forget_cached_keys()
