"""Two people editing one profile: the edit form carries
the version it started from, and a save on a stale base is refused with the other
person's change shown; the 256 KiB unit limit applies when a profile is saved."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.urls import reverse

from hostops.channel.push import MAX_UNIT_BYTES as PUSH_LIMIT
from tests.units.factories import baseline
from tests.units.test_views import client_for, form_post
from units.models import ServiceProfile
from units.rendering import MAX_UNIT_BYTES
from units.services import StaleEdit, profile_create, profile_update

pytestmark = pytest.mark.django_db


def base_version_on(html: str) -> str:
    match = re.search(r'name="base_version" value="(\d+)"', html)
    assert match, "the edit form carries the version it started from"
    return match.group(1)


def test_a_save_on_a_stale_base_is_refused_showing_the_other_change(
    alice: AbstractBaseUser, bob: AbstractBaseUser
) -> None:
    profile = profile_create(data=baseline(), created_by=alice)
    url = reverse("units:edit", args=[profile.pk])
    page = client_for(alice).get(url).content.decode()  # alice opens the form at v1
    profile_update(profile=profile, data={"max_num_seqs": 32}, updated_by=bob)  # bob saves v2

    body = form_post(baseline(port=8001), base_version=base_version_on(page))
    response = client_for(alice).post(url, body)

    assert response.status_code == 409
    html = response.content.decode()
    assert "bob saved version 2 since you opened this form (version 1)" in html
    assert "Nothing was saved" in html
    assert re.search(r"Max sequences</th>\s*<td[^>]*>64</td>\s*<td[^>]*>32</td>", html)
    profile.refresh_from_db()
    assert (profile.max_num_seqs, profile.port) == (32, 8000)
    assert profile.versions.count() == 2

    # Having seen it, alice saves again from the page she got back: on top of v2.
    again = form_post(baseline(port=8001, max_num_seqs=32), base_version=base_version_on(html))
    assert client_for(alice).post(url, again).status_code == 302
    profile.refresh_from_db()
    assert (profile.max_num_seqs, profile.port, profile.versions.count()) == (32, 8001, 3)


def test_the_service_refuses_a_stale_base(alice: AbstractBaseUser, bob: AbstractBaseUser) -> None:
    profile = profile_create(data=baseline(), created_by=alice)
    profile_update(profile=profile, data={"max_num_seqs": 32}, updated_by=bob)
    with pytest.raises(StaleEdit) as info:
        profile_update(profile=profile, data={"port": 8001}, updated_by=alice, base_version=1)
    assert (info.value.base.number, info.value.latest.number) == (1, 2)
    assert ServiceProfile.objects.get().port == 8000


def test_a_unit_over_256_kib_is_refused_when_the_profile_is_saved(
    alice: AbstractBaseUser,
) -> None:
    assert MAX_UNIT_BYTES == PUSH_LIMIT == 256 * 1024
    with pytest.raises(ValidationError) as info:
        profile_create(data=baseline(environment={"BLOB": "x" * (300 * 1024)}), created_by=alice)
    (message,) = info.value.message_dict["__all__"]
    assert "the limit is 262144 bytes" in message
    assert not ServiceProfile.objects.exists()
