"""Secrets in profiles: viewers see environment values and secret arguments
masked everywhere a profile or its unit is shown; editors and approvers see the unit as
it runs; the better home for a secret is a file on the host (EnvironmentFile=), which
specadmin names but never reads or shows."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.urls import reverse

from tests.units.factories import baseline
from tests.units.test_views import client_for
from units.masking import MASK, mask_args, mask_line
from units.rendering import render_unit
from units.roles import VIEWER, ensure_roles
from units.services import profile_create, profile_update
from units.validation import validate_profile_data

pytestmark = pytest.mark.django_db

TOKEN = "hf_SuperSecretToken123"
API_KEY = "sk-live-0123456789"
SECRET = baseline(
    environment={"HF_TOKEN": TOKEN, "VLLM_LOGGING_LEVEL": "INFO"},
    extra_args=["--api-key", API_KEY, "--disable-log-requests"],
)


@pytest.fixture
def victor(db: None) -> AbstractBaseUser:
    user = get_user_model().objects.create_user("victor")
    user.groups.add(ensure_roles()[VIEWER])
    return user


def pages(profile_pk: int, first_pk: int, second_pk: int) -> list[str]:
    return [
        reverse("units:detail", args=[profile_pk]),
        reverse("units:version", args=[profile_pk, 2]),
        reverse("units:compare") + f"?a={first_pk}&b={second_pk}",
    ]


def test_viewers_see_secrets_masked_on_every_profile_page(
    alice: AbstractBaseUser, victor: AbstractBaseUser
) -> None:
    profile = profile_create(data=baseline(), created_by=alice)
    profile_update(profile=profile, data=SECRET, updated_by=alice)
    first, second = profile.versions.get(number=1), profile.versions.get(number=2)
    for url in pages(profile.pk, first.pk, second.pk):
        html = client_for(victor).get(url).content.decode()
        assert TOKEN not in html and API_KEY not in html, url
        assert MASK in html, url
        assert "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7" in html or "compare" in url
    for url in pages(profile.pk, first.pk, second.pk):
        html = client_for(alice).get(url).content.decode()
        assert TOKEN in html and API_KEY in html, url


def test_masking_keeps_option_names_and_non_secret_values() -> None:
    assert mask_args(["--api-key", API_KEY, "--port", "8000", "--hf-token=x"]) == [
        "--api-key",
        MASK,
        "--port",
        "8000",
        f"--hf-token={MASK}",
    ]
    assert mask_line(f"Environment=HF_TOKEN={TOKEN}") == f"Environment=HF_TOKEN={MASK}"
    assert mask_line(f'+Environment="HF_TOKEN={TOKEN} x"') == f"+Environment=HF_TOKEN={MASK}"
    assert mask_line("Environment=CUDA_VISIBLE_DEVICES=0,1") == (
        "Environment=CUDA_VISIBLE_DEVICES=0,1"
    )
    assert mask_line(f"    --api-key '{API_KEY}' \\") == f"    --api-key {MASK} \\"


def test_a_secrets_file_on_the_host_is_named_in_the_unit_and_validated() -> None:
    data = baseline(environment_file="/etc/specadmin/kimi.env")
    assert validate_profile_data(data) == {}
    assert "\nEnvironmentFile=/etc/specadmin/kimi.env\n" in render_unit(data)
    for bad, why in [
        ("etc/kimi.env", "absolute path"),
        ("/etc/kimi env", "spaces"),
        ("/etc/../kimi.env", "plainly"),
        ("/etc/kimi\u2028.env", "U+2028"),
    ]:
        errors = validate_profile_data(baseline(environment_file=bad))
        assert any(why in message for message in errors["environment_file"]), (bad, errors)


def test_versions_saved_before_the_secrets_file_existed_render_and_compare_unchanged(
    alice: AbstractBaseUser,
) -> None:
    profile = profile_create(data=baseline(), created_by=alice)
    version = profile.versions.get()
    old_data = {k: v for k, v in version.data.items() if k != "environment_file"}
    assert render_unit(old_data) == version.unit_text
