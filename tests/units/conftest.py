"""Fixtures for profile tests: named users with roles (tests read like stories)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

from units.roles import OPERATOR, ensure_roles


@pytest.fixture
def alice(db: None) -> AbstractBaseUser:
    """An operator: edits profiles."""
    user = get_user_model().objects.create_user("alice")
    user.groups.add(ensure_roles()[OPERATOR])
    return user


@pytest.fixture
def bob(db: None) -> AbstractBaseUser:
    """Another operator."""
    user = get_user_model().objects.create_user("bob")
    user.groups.add(ensure_roles()[OPERATOR])
    return user


@pytest.fixture
def carl(db: None) -> AbstractBaseUser:
    """A third operator: clones and restores what others wrote."""
    user = get_user_model().objects.create_user("carl")
    user.groups.add(ensure_roles()[OPERATOR])
    return user
