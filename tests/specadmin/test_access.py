"""One access check for every app's pages (`specadmin.access.requires`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from deploys.permissions import REQUEST_DEPLOY, require
from specadmin.access import MissingPermission
from units.roles import ADMIN, APPROVER, OPERATOR, VIEWER, ensure_roles

ROOT = Path(__file__).resolve().parents[2]
APPS = ("units", "deploys", "audit", "specadmin")


def _python_files() -> list[Path]:
    return [p for app in APPS for p in (ROOT / app).rglob("*.py") if "migrations" not in p.parts]


def test_only_specadmin_access_defines_a_requires_decorator() -> None:
    defined = [
        str(path.relative_to(ROOT))
        for path in _python_files()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and node.name == "requires"
    ]
    assert defined == ["specadmin/access.py"]


def test_no_view_checks_permissions_with_its_own_decorator_chain() -> None:
    users = [
        str(path.relative_to(ROOT))
        for path in _python_files()
        if "permission_required" in path.read_text() and path.name != "access.py"
    ]
    assert users == []


# -- the page a user without the role sees ----------------------------------------------


def _user_with_roles(*roles: str) -> object:
    groups = ensure_roles()
    user = get_user_model().objects.create_user(f"user-{'-'.join(roles) or 'none'}")
    user.groups.add(*(groups[r] for r in roles))
    return user


@pytest.mark.django_db
def test_a_page_refused_for_lack_of_a_permission_names_the_roles_that_grant_it() -> None:
    client = Client()
    client.force_login(_user_with_roles(VIEWER))
    response = client.get(reverse("units:create"))
    assert response.status_code == 403
    text = response.content.decode()
    assert "<nav" in text  # the site's own page, with its navigation
    need = text.split("Your roles:")[0]
    assert "<strong>operator</strong>" in need and "<strong>admin</strong>" in need
    assert "approver" not in need  # approvers cannot add profiles
    assert re.search(r"Your roles:\s*<strong>viewer</strong>", text)


@pytest.mark.django_db
def test_a_user_without_any_role_is_told_each_role_that_grants_the_page() -> None:
    client = Client()
    client.force_login(_user_with_roles())
    response = client.get(reverse("deploys:host_list"))
    assert response.status_code == 403
    text = response.content.decode()
    for role in (VIEWER, OPERATOR, APPROVER, ADMIN):
        assert f"<strong>{role}</strong>" in text
    assert "You have no role yet" in text


@pytest.mark.django_db
def test_a_service_refusal_carries_the_missing_permission() -> None:
    with pytest.raises(MissingPermission) as refused:
        require(_user_with_roles(VIEWER), REQUEST_DEPLOY, "request deploys")
    assert refused.value.perms == (REQUEST_DEPLOY,)
    assert str(refused.value) == "You are not allowed to request deploys."
