"""A NUL character in a path, query or form is a 400 before any view sees it (on
PostgreSQL a query with one raised psycopg's DataError: a 500)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("ada-nul"))
    return client


@pytest.mark.parametrize(
    "url",
    [
        "/deploys/hosts/1/restart/?unit_name=vllm%00a",
        "/deploys/requests/?st%00atus=pending",
        "/api/v1/hosts/gpu%00a/",
        "/profiles/%00/",
    ],
)
def test_a_nul_in_the_path_or_query_is_a_400_that_says_why(admin: Client, url: str) -> None:
    answer = admin.get(url)
    assert answer.status_code == 400
    assert "NUL character" in answer.content.decode()


def test_a_nul_in_a_posted_form_is_a_400_and_under_api_it_is_json(admin: Client) -> None:
    answer = admin.post("/deploys/hosts/new/", {"name": "gpu\x00a"})
    assert answer.status_code == 400 and "NUL character" in answer.content.decode()
    api = admin.get("/api/v1/profiles/a%00b/")
    assert api.status_code == 400 and api.json()["detail"].startswith("The request holds a NUL")


def test_a_request_without_one_is_served_as_before(admin: Client) -> None:
    assert admin.get("/deploys/requests/?status=pending").status_code == 200
