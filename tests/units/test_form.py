"""The profile form in vLLM's and systemd's terms: every field says which flag, JSON key or
unit setting it writes and what it does; "Extra arguments" takes `--flag value` on one line;
each problem is shown once, at its field; a blank form starts without errors; a refused
save says that nothing was saved and points at the first problem."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from linting.rules.registry import all_rules
from tests.units.factories import baseline, ngram
from tests.units.test_views import client_for, form_post
from units.field_texts import HELP, KEYS, LABELS, SECTIONS
from units.forms import ProfileForm, extra_args_text, parse_extra_args
from units.models import PROFILE_FIELDS, ServiceProfile
from units.preview import build_preview
from units.profile_data import DEFAULT_VLLM_EXECUTABLE, normalize_profile_data
from units.rendering import exec_start_groups, line_fields, render_unit
from units.speculative import SPEC_KEYS, spec_methods

pytestmark = pytest.mark.django_db
FORM_FIELDS = [name for _, _, names in SECTIONS for name in names]

# -- what each field says --------------------------------------------------------------


def test_every_field_of_the_form_has_a_label_and_help() -> None:
    # the command line's order is bookkeeping, carried by the form, not shown (units.schema)
    assert sorted(FORM_FIELDS) == sorted(set(PROFILE_FIELDS) - {"command_layout"})
    assert [n for n in FORM_FIELDS if not LABELS.get(n) or not HELP.get(n)] == []


def test_the_flag_shown_beside_each_field_is_the_one_the_unit_writes() -> None:
    data = normalize_profile_data(
        ngram(
            max_num_seqs=8,
            working_directory="/srv/vllm",
            environment={"HF_HOME": "/srv/hf"},
            environment_file="/etc/vllm/secrets.env",
        )
    )
    for group in exec_start_groups(data):
        key = KEYS.get(group.field, "")
        if key.startswith("--"):
            assert group.words[0] == key, group
    for field, key in SPEC_KEYS.items():
        assert KEYS[field] == key
    text = render_unit(data)
    lines = text.splitlines()
    for number, field in line_fields(data, text).items():
        key = KEYS.get(field, "")
        if key.endswith("="):
            assert lines[number - 1].startswith(key), (field, lines[number - 1])


def test_the_form_shows_each_key_beside_its_label(alice: AbstractBaseUser) -> None:
    page = client_for(alice).get(reverse("units:create")).content.decode()
    for key in ("--max-num-seqs", "--host", "num_speculative_tokens", "User="):
        assert f'<code class="key">{key}</code>' in page


def test_a_new_profile_starts_with_the_usual_vllm_executable() -> None:
    assert ProfileForm()["vllm_executable"].value() == DEFAULT_VLLM_EXECUTABLE


def test_the_method_list_offers_what_the_chosen_version_accepts() -> None:
    for version in ("0.8.5", "0.33.0"):
        form = ProfileForm(initial_data=baseline(target_vllm_version=version))
        offered = [value for value, _ in form.fields["spec_method"].widget.choices if value]
        assert offered == list(spec_methods(version))
    assert "suffix" not in spec_methods("0.8.5") and "suffix" in spec_methods("0.33.0")


# -- extra arguments: `--flag value` on one line ---------------------------------------------


def test_an_option_and_its_value_may_share_a_line(alice: AbstractBaseUser) -> None:
    text = '--max-loras 4\n--compilation-config {"level": 3, "cudagraph_mode": "FULL"}\n--seed=7'
    response = client_for(alice).post(
        reverse("units:create"), form_post(baseline(), extra_args=text)
    )
    assert response.status_code == 302, response.context and response.context["preview"].issues
    profile = ServiceProfile.objects.get()
    assert profile.extra_args == [
        "--max-loras",
        "4",
        "--compilation-config",
        '{"level": 3, "cudagraph_mode": "FULL"}',
        "--seed=7",
    ]
    edit = client_for(alice).get(reverse("units:edit", args=[profile.pk])).content.decode()
    assert "--max-loras 4\n--compilation-config {&quot;level&quot;: 3" in edit


# Words the form can hold: no surrounding spaces (lines are stripped) and no option word
# with a space in its name (argparse knows no such option; the line would split).
_WORD = st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=12
).filter(
    lambda w: (
        w == w.strip() and not (w.startswith("-") and any(c.isspace() for c in w.split("=", 1)[0]))
    )
)


@given(st.lists(_WORD, max_size=8))
def test_extra_arguments_survive_the_form_word_for_word(words: list[str]) -> None:
    assert parse_extra_args(extra_args_text(words)) == words


# -- errors once, where they belong ----------------------------------------------------------


def test_a_problem_is_shown_once_at_its_field_and_counted_once() -> None:
    preview = build_preview(ngram(spec_prompt_lookup_min=9))
    (issue,) = preview.issues["spec_prompt_lookup_min"]
    assert "larger than max" in issue.message
    assert [item.issue.code for item in preview.findings] == ["VL304"]  # still listed, linked
    assert preview.counts["error"] == 1


def test_the_error_badge_counts_field_errors_too(alice: AbstractBaseUser) -> None:
    body = form_post(baseline(port=0))
    html = client_for(alice).post(reverse("units:preview"), body).content.decode()
    assert re.search(r'class="badge error">1 error<', html)
    assert "to fix" not in html


def test_a_blank_new_profile_starts_without_errors(alice: AbstractBaseUser) -> None:
    page = client_for(alice).get(reverse("units:create")).content.decode()
    assert 'class="issue error"' not in page
    assert 'class="badge error"' not in page


def test_while_typing_only_the_fields_touched_show_their_problems(
    alice: AbstractBaseUser,
) -> None:
    blank = {k: v for k, v in form_post({}).items() if k != "vllm_executable"}
    body = {**blank, "vllm_executable": DEFAULT_VLLM_EXECUTABLE, "name": "my/unit"}
    html = (
        client_for(alice)
        .post(reverse("units:preview"), {**body, "touched": "name"})
        .content.decode()
    )
    name_list = html[html.index('id="issues-name"') :]
    assert "name" in name_list[: name_list.index("</ul>")].lower()
    model_list = html[html.index('id="issues-model"') :]
    assert 'class="issue' not in model_list[: model_list.index("</ul>")]
    # `*` (after a refused save) shows everything again.
    full = client_for(alice).post(reverse("units:preview"), {**body, "touched": "*"})
    model_list = full.content.decode()[full.content.decode().index('id="issues-model"') :]
    assert 'class="issue error"' in model_list[: model_list.index("</ul>")]


def new_form_post(**typed: str) -> dict[str, str]:
    """What the New profile page sends: its initial values, plus what was typed in."""
    form = ProfileForm()
    body = {name: form[name].value() for name in form.fields}
    body = {k: ("on" if v is True else v) for k, v in body.items() if v not in (None, False)}
    return {**{k: str(v) for k, v in body.items()}, **typed}


def preview_of(body: dict[str, str], touched: set[str]) -> Any:
    form = ProfileForm(body)
    return build_preview(form.to_data(), form.shape_errors(), shown=touched)


def test_a_new_profiles_defaults_show_their_lint_findings_once_the_unit_can_be_judged() -> None:
    # The defaults (no User=, --host 0.0.0.0) make OP410; typed in were only the name and
    # the model. The badge once said "0 warnings" until the saved profile's page said 1.
    typed = {"name": "qwen", "model": "Qwen/Qwen3-8B"}
    preview = preview_of(new_form_post(**typed), set(typed))
    assert [row.issue.code for row in preview.findings] == ["OP410"]
    assert [issue.code for issue in preview.issues["user"]] == ["OP410"]
    assert preview.counts["warning"] == 1
    # before that, and for validation messages, only the fields typed in speak
    blank = preview_of(new_form_post(name="my/unit"), {"name"})
    assert set(blank.issues) == {"name"} and blank.findings == []


def test_a_refused_save_says_nothing_was_saved_and_points_at_the_first_problem(
    alice: AbstractBaseUser,
) -> None:
    response = client_for(alice).post(
        reverse("units:create"), form_post(baseline(port=0, max_num_seqs="many"))
    )
    assert response.status_code == 400
    html = response.content.decode()
    banner = html[html.index('id="save-refused"') :]
    banner = banner[: banner.index("</div>")]
    assert "Nothing was saved" in banner and "2 problems" in banner
    assert 'href="#field-port"' in banner  # the first problem, in form order
    port_input = re.search(r"<input[^>]*name=\"port\"[^>]*>", html)
    assert port_input and "autofocus" in port_input.group(0)


def test_findings_link_to_their_field(alice: AbstractBaseUser) -> None:
    body = form_post(ngram(spec_prompt_lookup_min=9))
    html = client_for(alice).post(reverse("units:preview"), body).content.decode()
    findings = html[html.index('id="findings"') :]
    assert 'href="#field-spec_prompt_lookup_min"' in findings
    page = client_for(alice).get(reverse("units:create")).content.decode()
    assert 'id="field-spec_prompt_lookup_min"' in page


def test_vllm_as_root_on_every_interface_is_shown_at_the_user_field() -> None:
    if "OP410" not in {rule.code for rule in all_rules()}:
        pytest.skip("OP410 (root on every interface) is not in the rule catalog yet")
    preview = build_preview(baseline(user="", group="", host="0.0.0.0"))
    assert [issue.code for issue in preview.issues.get("user", [])] == ["OP410"]
    assert "OP410" not in [issue.code for issue in preview.issues.get("host", [])]
    assert build_preview(baseline(host="0.0.0.0")).issues.get("user", []) == []
