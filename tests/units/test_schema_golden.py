"""Byte-for-byte pins of what the profile fields produce, so deriving forms, labels,
rendering and checks from one schema (units/schema.py) changes nothing: for every case
of tests/units/schema_cases.py the canonical data, the messages per field, the rendered
unit, the findings and the field each is shown at, the preview fragment, and the edit
page (new, refused, and editing a saved profile).

`SPECADMIN_UPDATE_GOLDEN=1` rewrites the files (only when a change is meant)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from django.urls import reverse

from tests.units.schema_cases import CASES
from tests.units.test_views import form_post
from units.linting import lint_profile
from units.models import ServiceProfile
from units.profile_data import normalize_profile_data
from units.rendering import line_fields, render_unit
from units.validation import field_errors, validate_profile_data

pytestmark = pytest.mark.django_db

GOLDEN = Path(__file__).parent / "golden" / "schema"
UPDATE = os.environ.get("SPECADMIN_UPDATE_GOLDEN") == "1"
_CSRF = re.compile(r'(name="csrfmiddlewaretoken" value=")[^"]*(")')
_CSRF_HEADER = re.compile(r'("X-CSRFToken": ")[^"]*(")')
_PK = re.compile(r"/profiles/\d+/")
# Primary keys differ by database (PostgreSQL's sequences are not reset between tests).
_PROFILE_ID = re.compile(r'(name="profile_id" value=")\d+(")')


def _stable_html(html: str) -> str:
    html = _CSRF.sub(r"\1CSRF\2", html)
    html = _CSRF_HEADER.sub(r"\1CSRF\2", html)
    html = _PROFILE_ID.sub(r"\1PK\2", html)
    return _PK.sub("/profiles/PK/", html)


def _compare(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"no golden file {path}: run with SPECADMIN_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden file"


def _facts(data: dict[str, Any]) -> dict[str, Any]:
    normalized = normalize_profile_data(data)
    facts: dict[str, Any] = {
        "data": normalized,
        "field_errors": field_errors(normalized),
        "errors": validate_profile_data(data),
    }
    try:
        text = render_unit(data)
    except Exception as exc:  # a case whose types do not render: pinned too
        facts["render_error"] = type(exc).__name__
        return facts
    facts["unit"] = text
    facts["line_fields"] = {str(k): v for k, v in line_fields(normalized, text).items()}
    if not facts["field_errors"]:
        lint = lint_profile(data)
        facts["findings"] = [
            [
                f.code,
                str(f.severity),
                f.span.start.line,
                f.span.start.column,
                f.message,
                lint.field_of(f),
                lint.describe(f),
            ]
            for f in lint.report.findings
        ]
    return facts


@pytest.mark.parametrize("case", sorted(CASES))
def test_profile_case_renders_checks_and_lints_as_pinned(case: str) -> None:
    facts = _facts(CASES[case])
    _compare(f"{case}.json", json.dumps(facts, indent=1, sort_keys=True, default=str) + "\n")


@pytest.mark.parametrize("case", sorted(CASES))
def test_profile_case_pages_are_pinned(case: str, alice: AbstractBaseUser) -> None:
    client = Client()
    client.force_login(alice)
    body = form_post(CASES[case])
    preview = client.post(reverse("units:preview"), body)
    _compare(f"{case}.preview.html", _stable_html(preview.content.decode()))
    created = client.post(reverse("units:create"), body)
    if created.status_code == 302:
        profile = ServiceProfile.objects.get(name=CASES[case]["name"])
        page = client.get(reverse("units:edit", args=[profile.pk]))
    else:
        page = created
    _compare(f"{case}.edit.html", f"{page.status_code}\n" + _stable_html(page.content.decode()))


def test_new_profile_page_is_pinned(alice: AbstractBaseUser) -> None:
    client = Client()
    client.force_login(alice)
    page = client.get(reverse("units:create"))
    _compare("new.edit.html", _stable_html(page.content.decode()))
