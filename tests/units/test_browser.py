"""The profile pages in real headless Chromium (Debian's package, driven by Playwright):
log in, create a profile, see a speculative-config finding appear inline while typing,
fix it, save, clone a variant and compare versions. Screenshots of every page go to
`artifacts/screenshots/` (git-ignored) so a reviewer can look at them."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model

from tests.browser import PASSWORD, expect, shot
from units.models import ProfileVersion, ServiceProfile
from units.roles import OPERATOR, ensure_roles

pytestmark = [pytest.mark.browser]


def test_create_fix_finding_save_clone_and_compare(live_server: object, page: object) -> None:
    user = get_user_model().objects.create_user("olga", password=PASSWORD)
    user.groups.add(ensure_roles()[OPERATOR])
    base = live_server.url  # type: ignore[attr-defined]

    # Log in.
    page.goto(f"{base}/profiles/")
    expect(page).to_have_url(re.compile(r"/accounts/login/"))
    page.fill("#id_username", "olga")
    page.fill("#id_password", PASSWORD)
    shot(page, "01-login")
    page.click("button[type=submit]")
    expect(page.get_by_role("heading", name="Profiles")).to_be_visible()
    shot(page, "02-list-empty")

    # Create a profile; the preview follows the typing.
    page.get_by_role("link", name="New profile").click()
    page.fill("#id_name", "vllm-qwen3-32b")
    page.fill("#id_description", "Qwen3 32B on two GPUs")
    page.fill("#id_vllm_executable", "/opt/vllm/bin/vllm")
    page.fill("#id_model", "/models/Qwen3-32B")
    page.fill("#id_served_model_names", "qwen3-32b")
    page.fill("#id_gpu_devices", "0,1")
    page.fill("#id_tensor_parallel_size", "2")
    preview = page.locator("#preview")
    expect(preview).to_contain_text("/models/Qwen3-32B")

    # Choose n-gram: its fields appear, a draft model field does not.
    expect(page.locator("#id_spec_num_tokens")).to_be_hidden()
    page.select_option("#id_spec_method", "ngram")
    expect(page.locator("#id_spec_num_tokens")).to_be_visible()
    expect(page.locator("#id_spec_draft_model")).to_be_hidden()
    page.fill("#id_spec_num_tokens", "5")
    page.fill("#id_spec_prompt_lookup_max", "4")
    # An invalid speculative config: min above max. The finding appears next to the field
    # and on the unit line, without a save.
    page.fill("#id_spec_prompt_lookup_min", "9")
    issues = page.locator("#issues-spec_prompt_lookup_min")
    expect(issues).to_contain_text("larger than")  # once, in the form's words
    expect(page.locator("#findings")).to_contain_text("VL304")  # the rule, in the list
    flagged = page.locator("#preview .ul.sev-error")
    expect(flagged).to_contain_text("--speculative-config")
    expect(flagged).to_contain_text('"prompt_lookup_min": 9')
    assert not ServiceProfile.objects.exists()
    shot(page, "03-create-with-finding")

    # Fix it: the message goes away, the line is clean.
    page.fill("#id_spec_prompt_lookup_min", "2")
    expect(issues).to_be_empty()
    expect(page.locator("#preview .ul.sev-error")).to_have_count(0)
    expect(preview).to_contain_text('"prompt_lookup_min": 2')
    shot(page, "04-create-fixed")
    page.fill("#id_comment", "first version")
    page.get_by_role("button", name="Create profile").click()
    expect(page.get_by_role("heading", name="vllm-qwen3-32b.service")).to_be_visible()
    expect(page.locator(".messages")).to_contain_text("Created vllm-qwen3-32b.service")
    shot(page, "05-detail")
    original = ServiceProfile.objects.get(name="vllm-qwen3-32b")
    assert original.spec_prompt_lookup_min == 2

    # Clone as a variant and give it a different method.
    page.get_by_role("link", name="Clone as variant").click()
    page.fill("#id_new_name", "vllm-qwen3-32b-suffix")
    shot(page, "06-clone")
    page.get_by_role("button", name="Create variant").click()
    expect(
        page.get_by_role("heading", name=re.compile("Edit vllm-qwen3-32b-suffix"))
    ).to_be_visible()
    page.select_option("#id_spec_method", "suffix")
    expect(page.locator("#id_spec_prompt_lookup_max")).to_be_hidden()
    expect(preview).to_contain_text('"method": "suffix"')
    page.fill("#id_spec_num_tokens", "8")
    expect(preview).to_contain_text('"num_speculative_tokens": 8')
    shot(page, "07-edit-variant")
    page.fill("#id_comment", "suffix decoding")
    page.get_by_role("button", name="Save new version").click()
    expect(page.locator(".messages")).to_contain_text("Saved version 2")
    variant = ServiceProfile.objects.get(name="vllm-qwen3-32b-suffix")
    assert variant.cloned_from == original
    assert variant.spec_prompt_lookup_max is None
    assert list(variant.versions.values_list("number", flat=True).order_by("number")) == [1, 2]

    # History: compare the variant's two versions.
    page.get_by_role("link", name=re.compile(r"^History \(")).click()
    expect(page.locator("table.list tbody tr")).to_have_count(2)
    shot(page, "08-history")
    page.get_by_role("button", name="Compare selected versions").click()
    expect(page.locator("table.diff-table")).to_contain_text("Method")
    expect(page.locator("pre.diff .add")).to_contain_text('"method": "suffix"')
    expect(page.locator("pre.diff .del")).to_contain_text('"method": "ngram"')
    shot(page, "09-compare-versions")

    # And the variant against its original.
    page.goto(f"{base}/profiles/{variant.pk}/")
    page.get_by_role("link", name="compare with it").click()
    expect(page.locator("h1")).to_contain_text("vllm-qwen3-32b v1")
    expect(page.locator("table.diff-table")).to_contain_text("Unit name")
    shot(page, "10-compare-with-original")
    assert ProfileVersion.objects.count() == 3

    page.goto(f"{base}/profiles/")
    expect(page.locator("table.list tbody tr")).to_have_count(2)
    page.fill("input[name=q]", "suffix")
    expect(page.locator("table.list tbody tr")).to_have_count(1)
    shot(page, "11-list-search")
