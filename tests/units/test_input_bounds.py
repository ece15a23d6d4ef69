"""Bad input is a field error or a 400, never a 500: numbers past
Python's decimal and int-conversion limits, and over-long ids in query strings."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from tests.units.factories import baseline
from tests.units.test_views import client_for, form_post
from units.profile_data import INT_FIELDS
from units.services import profile_create
from units.validation import clean_profile_data, validate_profile_data

pytestmark = pytest.mark.django_db

DIGITS_5000 = "9" * 5000  # past Python's 4,300-digit limit for int(str)


@pytest.mark.parametrize("value", ["1E+1000000", "1e999999999", "-1E+1000000", "9" * 5000])
def test_gpu_memory_utilization_past_decimal_limits_is_a_field_error(value: str) -> None:
    with pytest.raises(ValidationError) as info:
        clean_profile_data(baseline(gpu_memory_utilization=value))
    assert info.value.message_dict["gpu_memory_utilization"] == ["Enter a fraction such as 0.9."]


@pytest.mark.parametrize("field", sorted(INT_FIELDS))
def test_a_number_with_thousands_of_digits_is_a_field_error(field: str) -> None:
    errors = validate_profile_data(baseline(**{field: DIGITS_5000}))
    assert errors[field] == ["Enter a whole number (at most 18 digits)."]


def test_profile_form_with_huge_numbers_answers_400_with_field_errors(
    alice: AbstractBaseUser,
) -> None:
    client = client_for(alice)
    body = form_post(baseline(), port=DIGITS_5000, gpu_memory_utilization="1E+1000000")
    response = client.post(reverse("units:create"), body)
    assert response.status_code == 400
    page = response.content.decode()
    assert "Enter a whole number (at most 18 digits)." in page
    assert "Enter a fraction such as 0.9." in page
    preview = client.post(reverse("units:preview"), {**body, "profile_id": DIGITS_5000})
    assert preview.status_code == 200


@pytest.mark.parametrize(
    "query",
    [{"a": DIGITS_5000, "b": "1"}, {"a": "1", "b": "99999999999999999999"}, {"a": "-1"}],
)
def test_compare_with_an_impossible_version_id_is_a_400(
    alice: AbstractBaseUser, query: dict[str, str]
) -> None:
    profile_create(data=baseline(), created_by=alice)
    response = client_for(alice).get(reverse("units:compare"), query)
    assert response.status_code == 400


def test_pages_with_huge_page_numbers_still_answer(alice: AbstractBaseUser) -> None:
    client: Client = client_for(alice)
    profile = profile_create(data=baseline(), created_by=alice)
    for url in (reverse("units:list"), reverse("units:history", args=[profile.pk])):
        assert client.get(url, {"page": DIGITS_5000}).status_code == 200
