"""The OpenAPI schema is valid (drf-spectacular's own validation, warnings fail) and
names every route; schemathesis then calls every operation of it with generated
parameters and bodies, as an admin with a `request` token: no answer is a 5xx, and every
answer matches the schema (status, content type, body).

Bounded for CI: a few dozen examples per operation (derandomized when CI is set, see
tests/conftest.py). More locally: FUZZ_EXAMPLES=500 pytest tests/api/test_schema_and_fuzz.py
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import schemathesis
from django.core import signals
from django.core.management import call_command
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from specadmin.wsgi import application
from tests.deploys.helpers import Enqueued, FakeHosts, People
from units.models import ServiceProfile

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "15"))
schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", application)


def test_the_schema_is_valid_without_warnings_and_names_every_route(tmp_path: Path) -> None:
    out = tmp_path / "schema.json"
    call_command(
        "spectacular",
        "--validate",
        "--fail-on-warn",
        "--format",
        "openapi-json",
        "--file",
        str(out),
    )
    paths = json.loads(out.read_text(encoding="utf-8"))["paths"]
    for route in ("/profiles/{name}/versions/", "/jobs/{id}/", "/lint/", "/history/", "/imports/"):
        assert f"/api/v1{route}" in paths, route
    decisions = [p for p in paths if any(w in p for w in ("approv", "reject", "decid"))]
    assert decisions == []


@pytest.fixture
def wsgi_in_the_test_transaction() -> Iterator[None]:
    """Calls go to the WSGI application itself; as Django's test client does, the end of
    a request must not close the test's database connection (its transaction)."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def admin_token(
    wsgi_in_the_test_transaction: None,
    people: People,
    token: Callable[..., str],
    profile: ServiceProfile,
    host: object,
    on_host: FakeHosts,
    enqueued: Enqueued,
) -> str:
    return token(people.ada, "request")


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
    ],
)
def test_no_api_call_is_a_server_error_and_every_answer_fits_the_schema(
    case: schemathesis.Case, admin_token: str
) -> None:
    case.call_and_validate(
        headers={"Authorization": f"Bearer {admin_token}"},
        checks=[
            not_a_server_error,
            status_code_conformance,
            content_type_conformance,
            response_schema_conformance,
        ],
    )
