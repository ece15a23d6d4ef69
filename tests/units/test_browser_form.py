"""The profile form in real Chromium, as an operator types: a blank form starts without
errors and shows problems only where typed; Enter never saves a version by accident; the
method list follows the target vLLM version; a finding's field link puts the cursor in
the field; a refused save says nothing was saved and starts at the first problem.
Screenshots: artifacts/screenshots/form-*.png."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from tests.browser import PASSWORD, expect, login, shot
from tests.units.factories import ngram
from units.models import ProfileVersion, ServiceProfile
from units.roles import OPERATOR, ensure_roles
from units.services import profile_create

pytestmark = [pytest.mark.browser]


@pytest.fixture
def olga(transactional_db: None) -> Any:
    user = get_user_model().objects.create_user("olga", password=PASSWORD)
    user.groups.add(ensure_roles()[OPERATOR])
    return user


def test_a_new_profile_shows_problems_only_where_typed(
    live_server: Any, page: Any, olga: Any
) -> None:
    login(page, live_server.url, "olga")
    page.goto(f"{live_server.url}/profiles/new/")
    expect(page.locator("#id_vllm_executable")).to_have_value("/opt/vllm/bin/vllm")
    expect(page.locator(".issue.error")).to_have_count(0)
    expect(page.locator(".badge.error")).to_have_count(0)
    shot(page, "form-01-blank")
    page.fill("#id_name", "bad/name")
    expect(page.locator("#issues-name .issue.error")).to_have_count(1)
    expect(page.locator("#issues-model .issue")).to_have_count(0)  # not typed in yet
    shot(page, "form-02-one-field-typed")


def test_enter_in_a_field_does_not_save_a_version(live_server: Any, page: Any, olga: Any) -> None:
    profile = profile_create(data=ngram(), created_by=olga)
    login(page, live_server.url, "olga")
    page.goto(f"{live_server.url}/profiles/{profile.pk}/edit/")
    page.fill("#id_max_num_seqs", "32")
    page.press("#id_max_num_seqs", "Enter")
    expect(page.locator("#id_comment")).to_be_focused()
    expect(page.locator("#enter-hint")).to_be_visible()
    assert ProfileVersion.objects.filter(profile=profile).count() == 1
    shot(page, "form-03-enter-moves-to-comment")
    page.keyboard.type("fewer sequences")
    page.keyboard.press("Enter")
    expect(page.locator(".messages")).to_contain_text("Saved version 2")
    assert ServiceProfile.objects.get(pk=profile.pk).max_num_seqs == 32


def test_the_method_list_follows_the_target_version_and_findings_lead_to_fields(
    live_server: Any, page: Any, olga: Any
) -> None:
    profile = profile_create(data=ngram(), created_by=olga)
    login(page, live_server.url, "olga")
    page.goto(f"{live_server.url}/profiles/{profile.pk}/edit/")
    methods = page.locator("#id_spec_method option")
    expect(methods).to_contain_text(["suffix"])  # 0.16.0 has it
    page.select_option("#id_target_vllm_version", "0.8.5")
    assert "suffix" not in methods.all_inner_texts()
    page.select_option("#id_target_vllm_version", "0.16.0")
    page.fill("#id_spec_prompt_lookup_min", "9")
    issues = page.locator("#issues-spec_prompt_lookup_min .issue")
    expect(issues).to_have_count(1)  # said once, not also as VL304
    expect(page.locator(".preview-summary .badge.error")).to_have_text("1 error")
    link = page.locator("#findings a.field-link", has_text="Prompt lookup min")
    page.focus("#id_name")
    link.click()
    expect(page.locator("#id_spec_prompt_lookup_min")).to_be_focused()
    shot(page, "form-04-finding-linked-to-field")


def test_a_refused_save_says_nothing_was_saved_and_starts_at_the_first_problem(
    live_server: Any, page: Any, olga: Any
) -> None:
    login(page, live_server.url, "olga")
    page.goto(f"{live_server.url}/profiles/new/")
    page.fill("#id_name", "vllm-qwen3")
    page.fill("#id_model", "/models/Qwen3")
    page.fill("#id_port", "0")
    page.get_by_role("button", name="Create profile").click()
    banner = page.locator("#save-refused")
    expect(banner).to_contain_text("Nothing was saved")
    expect(banner).to_contain_text("Port")
    expect(page.locator("#id_port")).to_be_focused()
    assert not ServiceProfile.objects.exists()
    shot(page, "form-05-save-refused")
