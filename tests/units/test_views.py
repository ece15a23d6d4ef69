"""Profile pages through the views: permissions, list, create/edit/clone/archive/restore,
the live preview (findings, never saves) and field messages in the user's terms."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from deploys.models import DeployRequest, Host
from tests.units.factories import baseline, ngram
from units.field_texts import LABELS
from units.forms import initial_from_data
from units.models import PROFILE_FIELDS, ProfileVersion, ServiceProfile
from units.preview import build_preview
from units.profile_data import model_values, normalize_profile_data
from units.roles import VIEWER, ensure_roles
from units.services import profile_create, profile_update

pytestmark = pytest.mark.django_db


@pytest.fixture
def victor(db: None) -> AbstractBaseUser:
    """A viewer: reads profiles, changes nothing."""
    user = get_user_model().objects.create_user("victor")
    user.groups.add(ensure_roles()[VIEWER])
    return user


def client_for(user: AbstractBaseUser) -> Client:
    client = Client()
    client.force_login(user)
    return client


def form_post(data: dict[str, Any], **extra: str) -> dict[str, str]:
    """The POST body the edit form sends for `data` (checkboxes only when ticked)."""
    body: dict[str, str] = {}
    for name, value in initial_from_data(normalize_profile_data(data)).items():
        if isinstance(value, bool):
            if value:
                body[name] = "on"
        else:
            body[name] = value
    body.update(extra)
    return body


@pytest.fixture
def kimi(alice: AbstractBaseUser) -> ServiceProfile:
    return profile_create(data=baseline(), created_by=alice)


def make_profiles(count: int, **overrides: Any) -> None:
    """Rows only (the list does not read versions): fast set-up for list tests."""
    rows = []
    for i in range(count):
        data = normalize_profile_data(baseline(name=f"svc-{i:03d}", **overrides))
        rows.append(ServiceProfile(**model_values(data)))
    ServiceProfile.objects.bulk_create(rows)


# -- permissions -------------------------------------------------------------------------


@pytest.mark.parametrize("url_name", ["units:list", "units:create"])
def test_anonymous_user_is_redirected_to_login(client: Client, url_name: str) -> None:
    response = client.get(reverse(url_name))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_anonymous_preview_is_redirected_and_renders_nothing(client: Client) -> None:
    response = client.post(reverse("units:preview"), form_post(baseline()))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_anonymous_user_cannot_see_a_profile(client: Client, kimi: ServiceProfile) -> None:
    for url in (
        reverse("units:detail", args=[kimi.pk]),
        reverse("units:history", args=[kimi.pk]),
        reverse("units:edit", args=[kimi.pk]),
    ):
        assert client.get(url).status_code == 302


def test_viewer_reads_profiles_and_history(victor: AbstractBaseUser, kimi: ServiceProfile) -> None:
    client = client_for(victor)
    assert client.get(reverse("units:list")).status_code == 200
    detail = client.get(reverse("units:detail", args=[kimi.pk]))
    assert detail.status_code == 200
    assert b"ExecStart=" in detail.content
    assert reverse("units:edit", args=[kimi.pk]).encode() not in detail.content
    assert client.get(reverse("units:history", args=[kimi.pk])).status_code == 200


def test_viewer_cannot_edit_create_clone_archive_restore_or_preview(
    victor: AbstractBaseUser, kimi: ServiceProfile
) -> None:
    client = client_for(victor)
    forbidden = [
        ("get", reverse("units:edit", args=[kimi.pk]), None),
        ("post", reverse("units:edit", args=[kimi.pk]), form_post(baseline(port=9000))),
        ("get", reverse("units:create"), None),
        ("post", reverse("units:create"), form_post(baseline(name="other"))),
        ("post", reverse("units:clone", args=[kimi.pk]), {"new_name": "copy"}),
        ("post", reverse("units:archive", args=[kimi.pk]), {}),
        ("post", reverse("units:restore", args=[kimi.pk, 1]), {}),
        ("post", reverse("units:preview"), form_post(baseline())),
    ]
    for method, url, body in forbidden:
        response = getattr(client, method)(url, body) if body is not None else client.get(url)
        assert response.status_code == 403, (method, url)
    kimi.refresh_from_db()
    assert (kimi.port, kimi.archived) == (8000, False)
    assert ServiceProfile.objects.count() == 1
    assert ProfileVersion.objects.count() == 1


def test_user_without_a_role_cannot_read_profiles(kimi: ServiceProfile) -> None:
    nobody = get_user_model().objects.create_user("nobody")
    assert client_for(nobody).get(reverse("units:list")).status_code == 403


def test_operator_can_edit(alice: AbstractBaseUser, kimi: ServiceProfile) -> None:
    client = client_for(alice)
    assert client.get(reverse("units:edit", args=[kimi.pk])).status_code == 200
    response = client.post(
        reverse("units:edit", args=[kimi.pk]), form_post(baseline(port=9000), comment="new port")
    )
    assert response.status_code == 302
    kimi.refresh_from_db()
    assert kimi.port == 9000


# -- list --------------------------------------------------------------------------------


def test_list_searches_name_model_and_description(alice: AbstractBaseUser) -> None:
    make_profiles(3)
    profile_create(
        data=baseline(name="qwen-coder", model="/models/Qwen3-Coder", description="coding"),
        created_by=alice,
    )
    client = client_for(alice)
    for query in ("qwen-coder", "Qwen3", "coding"):
        page = client.get(reverse("units:list"), {"q": query})
        assert page.context["page"].paginator.count == 1, query
        assert b"qwen-coder" in page.content
    assert client.get(reverse("units:list"), {"q": "svc-00"}).context["page"].paginator.count == 3


def test_list_filters_by_method_and_vllm_version(alice: AbstractBaseUser) -> None:
    make_profiles(2)
    profile_create(data=ngram(), created_by=alice)
    profile_create(data=baseline(name="old", target_vllm_version="0.11.0"), created_by=alice)
    client = client_for(alice)

    def names(**params: str) -> list[str]:
        return [p.name for p in client.get(reverse("units:list"), params).context["page"]]

    assert names(method="ngram") == ["vllm-kimi-k25-int4-ngram"]
    assert names(method="none") == ["old", "svc-000", "svc-001"]
    assert names(vllm="0.11.0") == ["old"]
    assert names(method="ngram", vllm="0.11.0") == []
    # A value no form offers is ignored, not an error page.
    assert len(names(method="<script>")) == 4


def test_list_paginates_by_50(alice: AbstractBaseUser) -> None:
    make_profiles(120)
    client = client_for(alice)
    first = client.get(reverse("units:list"))
    assert len(first.context["page"].object_list) == 50
    assert first.context["page"].paginator.num_pages == 3
    last = client.get(reverse("units:list"), {"page": "3"})
    assert last.context["page"].object_list[0].name == "svc-100"
    assert len(last.context["page"].object_list) == 20
    assert client.get(reverse("units:list"), {"page": "junk"}).status_code == 200


def test_list_query_count_does_not_grow_with_rows(
    alice: AbstractBaseUser, django_assert_max_num_queries: Any
) -> None:
    make_profiles(60)
    client = client_for(alice)
    client.get(reverse("units:list"))  # warm the session
    # session, user, groups/permissions, count, page, host-filter choices, the failed-
    # rollback banner (deploys.context_processors): a constant.
    with django_assert_max_num_queries(8):
        client.get(reverse("units:list"), {"q": "svc"})


def test_list_htmx_request_returns_only_the_results(alice: AbstractBaseUser) -> None:
    make_profiles(2)
    response = client_for(alice).get(reverse("units:list"), {"q": "svc"}, HTTP_HX_REQUEST="true")
    assert b"<html" not in response.content
    assert b"svc-001" in response.content
    assert "HX-Request" in response["Vary"]


def test_archived_profiles_are_listed_only_when_asked(
    alice: AbstractBaseUser, kimi: ServiceProfile
) -> None:
    client = client_for(alice)
    client.post(reverse("units:archive", args=[kimi.pk]))
    assert client.get(reverse("units:list")).context["page"].paginator.count == 0
    archived = client.get(reverse("units:list"), {"state": "archived"})
    assert [p.name for p in archived.context["page"]] == [kimi.name]
    assert client.get(reverse("units:list"), {"state": "all"}).context["page"].paginator.count == 1


# -- create / edit -----------------------------------------------------------------------


def test_create_through_the_form_saves_version_one(alice: AbstractBaseUser) -> None:
    client = client_for(alice)
    page = client.get(reverse("units:create"))
    assert page.status_code == 200
    assert b'hx-post="/profiles/preview/"' in page.content
    response = client.post(
        reverse("units:create"),
        form_post(
            baseline(environment={"HF_HUB_OFFLINE": "1"}, extra_args=["--enforce-eager"]),
            comment="first",
        ),
    )
    profile = ServiceProfile.objects.get(name="vllm-kimi-k25-int4")
    assert response.status_code == 302
    assert response["Location"] == reverse("units:detail", args=[profile.pk])
    version = profile.versions.get()
    assert (version.number, version.comment, version.created_by) == (1, "first", alice)
    assert profile.environment == {"HF_HUB_OFFLINE": "1"}
    assert profile.extra_args == ["--enforce-eager"]
    assert profile.trust_remote_code is True


def test_edit_saves_a_new_version_with_the_changed_fields(
    alice: AbstractBaseUser, kimi: ServiceProfile
) -> None:
    client = client_for(alice)
    client.post(
        reverse("units:edit", args=[kimi.pk]),
        form_post(baseline(max_num_seqs=128, description="more sequences"), comment="load test"),
    )
    latest = kimi.versions.order_by("-number").first()
    assert latest.number == 2
    assert latest.changed_fields == ["description", "max_num_seqs"]
    assert latest.comment == "load test"


def test_edit_without_changes_saves_no_version(
    alice: AbstractBaseUser, kimi: ServiceProfile
) -> None:
    response = client_for(alice).post(
        reverse("units:edit", args=[kimi.pk]), form_post(baseline()), follow=True
    )
    assert b"Nothing changed" in response.content
    assert kimi.versions.count() == 1


def test_edit_ignores_a_posted_rename(alice: AbstractBaseUser, kimi: ServiceProfile) -> None:
    client_for(alice).post(
        reverse("units:edit", args=[kimi.pk]), form_post(baseline(name="renamed", port=9001))
    )
    kimi.refresh_from_db()
    assert (kimi.name, kimi.port) == ("vllm-kimi-k25-int4", 9001)


def test_unticking_a_checkbox_is_saved(alice: AbstractBaseUser, kimi: ServiceProfile) -> None:
    client_for(alice).post(
        reverse("units:edit", args=[kimi.pk]), form_post(baseline(trust_remote_code=False))
    )
    kimi.refresh_from_db()
    assert kimi.trust_remote_code is False


def test_archived_profile_cannot_be_edited(alice: AbstractBaseUser, kimi: ServiceProfile) -> None:
    client = client_for(alice)
    client.post(reverse("units:archive", args=[kimi.pk]))
    response = client.get(reverse("units:edit", args=[kimi.pk]), follow=True)
    assert b"archived" in response.content
    assert response.redirect_chain[-1][0] == reverse("units:detail", args=[kimi.pk])


# -- bad input: messages next to the field, nothing saved ---------------------------------


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("port", "eighty", "Enter a whole number."),
        ("port", "70000", "The port must be between 1 and 65535."),
        ("gpu_memory_utilization", "1.5", "above 0, at most 1"),
        ("max_model_len", "lots", "cannot read “lots” as a length"),
        ("vllm_executable", "vllm", "Give an absolute path"),
        ("name", "my/unit", "name"),
        ("gpu_devices", "0,1,x", "“x” is not a GPU index"),
        ("user", "9bad user", "is not a valid user name"),
        ("quantization", "int3", "has no quantization method “int3”"),
        ("environment", "NO_EQUALS_SIGN", "write it as NAME=value"),
        ("extra_args", "--max-loras four", "invalid int value"),
        ("gpu_free_wait_sec", "1790", "must fit inside the start timeout"),
        # a negative number is a number: its field's range says what is allowed
        ("gpu_free_wait_sec", "-5", "The GPU-free wait must be at least 1 s"),
        ("restart_sec", " -1 ", "The restart delay must be 0 to 86400 seconds."),
        ("port", "-8000", "The port must be between 1 and 65535."),
    ],
)
def test_create_rejects_bad_input_with_a_message_at_the_field(
    alice: AbstractBaseUser, field: str, value: str, expected: str
) -> None:
    response = client_for(alice).post(
        reverse("units:create"), form_post(baseline(), **{field: value})
    )
    assert response.status_code == 400
    assert not ServiceProfile.objects.exists()
    row = next(
        row
        for section in response.context["sections"]
        for row in section.rows
        if row.field.name == field
    )
    messages = " ".join(issue.message for issue in row.issues)
    assert expected in messages, messages
    assert f'id="issues-{field}"'.encode() in response.content


def test_lint_error_blocks_the_save_and_is_shown_at_the_field_and_line(
    alice: AbstractBaseUser,
) -> None:
    response = client_for(alice).post(
        reverse("units:create"), form_post(ngram(spec_prompt_lookup_min="9"))
    )
    assert response.status_code == 400
    assert not ServiceProfile.objects.exists()
    preview = response.context["preview"]
    (at_field,) = preview.issues["spec_prompt_lookup_min"]  # said once, in the form's words
    assert "larger than max" in at_field.message
    (finding,) = [row.issue for row in preview.findings if row.issue.code == "VL304"]
    assert b"sev-error" in response.content
    assert f'id="unit-line-{finding.line}"'.encode() in response.content


def test_warnings_are_shown_but_do_not_block(alice: AbstractBaseUser) -> None:
    response = client_for(alice).post(
        reverse("units:create"), form_post(baseline(restart="no")), follow=True
    )
    profile = ServiceProfile.objects.get()
    assert profile.restart == "no"
    codes = [row.issue.code for row in response.context["preview"].findings]
    assert "OP404" in codes  # no Restart= policy: shown on the profile page


def test_fields_with_only_warnings_are_not_counted_as_to_fix() -> None:
    preview = build_preview(baseline(restart="no"))
    assert [issue.severity for issue in preview.issues["restart"]] == ["warning"]
    assert preview.invalid_fields == 0
    assert build_preview(baseline(port=0, restart="no")).invalid_fields == 1


# -- live preview ------------------------------------------------------------------------


def test_preview_returns_the_unit_and_inline_findings_without_saving(
    alice: AbstractBaseUser, kimi: ServiceProfile
) -> None:
    before = (ServiceProfile.objects.count(), ProfileVersion.objects.count())
    body = form_post(ngram(name=kimi.name, spec_prompt_lookup_min="9"), profile_id=str(kimi.pk))
    response = client_for(alice).post(reverse("units:preview"), body, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html
    assert "ExecStart=" in html and "--speculative-config" in html
    assert "VL304" in html
    # The field's messages come as an out-of-band swap next to the field.
    start = html.index('id="issues-spec_prompt_lookup_min" hx-swap-oob="true"')
    assert "larger than" in html[start : html.index("</ul>", start)]
    # Fixed fields are cleared by an empty swap of their list.
    assert '<ul class="issues" id="issues-port" hx-swap-oob="true"></ul>' in html
    kimi.refresh_from_db()
    assert kimi.spec_method == ""
    assert (ServiceProfile.objects.count(), ProfileVersion.objects.count()) == before


def test_preview_of_unrenderable_input_names_the_fields(alice: AbstractBaseUser) -> None:
    body = form_post(baseline(), gpu_free_wait_sec="soon", description="two\nlines")
    html = client_for(alice).post(reverse("units:preview"), body).content.decode()
    assert "cannot render yet" in html
    assert "Enter a whole number." in html
    assert not ServiceProfile.objects.exists()


def test_preview_and_compare_answer_superscript_digits_instead_of_failing(
    alice: AbstractBaseUser, kimi: ServiceProfile
) -> None:
    """ "²".isdigit() is true but int("²") raises: these were 500s."""
    client = client_for(alice)
    body = form_post(baseline(), port="²", profile_id="²")
    response = client.post(reverse("units:preview"), body)
    assert response.status_code == 200
    assert "Enter a whole number." in response.content.decode()
    assert client.get(reverse("units:compare"), {"a": "²", "b": "1"}).status_code == 400


def test_preview_shows_only_the_fields_the_method_takes(alice: AbstractBaseUser) -> None:
    page = client_for(alice).get(reverse("units:create"))
    rows = {row.field.name: row for s in page.context["sections"] for row in s.rows}
    assert rows["spec_num_tokens"].hidden and rows["spec_draft_model"].hidden
    kimi = profile_create(data=ngram(), created_by=alice)
    edit = client_for(alice).get(reverse("units:edit", args=[kimi.pk]))
    rows = {row.field.name: row for s in edit.context["sections"] for row in s.rows}
    assert not rows["spec_prompt_lookup_max"].hidden
    assert rows["spec_draft_model"].hidden


# -- clone, archive, history, restore, compare ------------------------------------------


def test_clone_creates_a_variant_beside_the_original(
    alice: AbstractBaseUser, kimi: ServiceProfile
) -> None:
    client = client_for(alice)
    response = client.post(reverse("units:clone", args=[kimi.pk]), {"new_name": "kimi-ngram"})
    variant = ServiceProfile.objects.get(name="kimi-ngram")
    assert response["Location"] == reverse("units:edit", args=[variant.pk])
    assert variant.cloned_from == kimi
    assert variant.versions.get().comment == "Cloned from vllm-kimi-k25-int4 v1"
    duplicate = client.post(reverse("units:clone", args=[kimi.pk]), {"new_name": "kimi-ngram"})
    assert duplicate.status_code == 400
    assert "already exists" in " ".join(duplicate.context["form"].errors["new_name"])


def test_archive_hides_but_keeps_history(alice: AbstractBaseUser, kimi: ServiceProfile) -> None:
    client = client_for(alice)
    assert client.get(reverse("units:archive", args=[kimi.pk])).status_code == 405
    client.post(reverse("units:archive", args=[kimi.pk]))
    kimi.refresh_from_db()
    assert kimi.archived
    assert kimi.versions.count() == 1
    client.post(reverse("units:unarchive", args=[kimi.pk]))
    kimi.refresh_from_db()
    assert not kimi.archived


def test_history_lists_versions_with_who_and_what(
    alice: AbstractBaseUser, bob: AbstractBaseUser, kimi: ServiceProfile
) -> None:
    profile_update(profile=kimi, data={"port": 8001}, updated_by=bob, comment="port clash")
    page = client_for(alice).get(reverse("units:history", args=[kimi.pk]))
    html = page.content.decode()
    assert "v2" in html and "v1" in html
    assert "bob" in html and "alice" in html
    assert "port clash" in html
    assert "Port" in html  # changed fields, in the form's words
    assert "Restore this version" in html


def test_restore_creates_a_new_version(alice: AbstractBaseUser, kimi: ServiceProfile) -> None:
    profile_update(profile=kimi, data={"port": 8001}, updated_by=alice)
    client = client_for(alice)
    response = client.post(reverse("units:restore", args=[kimi.pk, 1]), follow=True)
    assert b"Restored version 1 as version 3" in response.content
    kimi.refresh_from_db()
    assert kimi.port == 8000
    latest = kimi.versions.order_by("-number").first()
    assert (latest.number, latest.changed_fields) == (3, ["port"])


def test_version_page_lists_settings_in_field_order_whatever_the_stored_order(
    alice: AbstractBaseUser, kimi: ServiceProfile
) -> None:
    """PostgreSQL's jsonb reorders keys (shortest first): the page must not follow it."""
    v1 = kimi.versions.get(number=1)
    shuffled = dict(sorted(v1.data.items(), key=lambda item: (len(item[0]), item[0])))
    v2 = ProfileVersion.objects.create(
        profile=kimi,
        number=2,
        data=shuffled,
        unit_text=v1.unit_text,
        unit_sha256=v1.unit_sha256,
        changed_fields=[],
        created_by=alice,
    )
    response = client_for(alice).get(reverse("units:version", args=[kimi.pk, v2.number]))
    labels = [label for label, _ in response.context["settings"]]
    assert labels == [LABELS[name] for name in PROFILE_FIELDS]


def test_compare_shows_field_and_unit_diffs(alice: AbstractBaseUser, kimi: ServiceProfile) -> None:
    v2 = profile_update(profile=kimi, data=ngram(name=kimi.name), updated_by=alice)
    v1 = kimi.versions.get(number=1)
    response = client_for(alice).get(reverse("units:compare"), {"a": v1.pk, "b": v2.pk})
    assert response.status_code == 200
    labels = [label for label, _, _ in response.context["fields"]]
    assert "Method" in labels and "Speculative tokens" in labels
    html = response.content.decode()
    assert '<span class="dl add">+    --speculative-config' in html
    assert client_for(alice).get(reverse("units:compare"), {"a": "x"}).status_code == 400
    assert client_for(alice).get(reverse("units:compare"), {"a": 999, "b": 998}).status_code == 404


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ({}, "No versions were chosen: a comparison needs two, A (from) and B (to)."),
        ({"a": "1"}, "Version B was not chosen: a comparison needs two, A (from) and B (to)."),
        ({"a": "x", "b": "1"}, "A=&quot;x&quot; is not a version id (a whole number)."),
        ({"a": "1", "b": "9" * 40}, f"B=&quot;{'9' * 20}…&quot; is not a version id"),
    ],
    ids=["none", "one", "not-a-number", "too-long"],
)
def test_compare_without_two_versions_says_on_the_site_page_what_is_wrong_and_how_to_choose(
    alice: AbstractBaseUser, query: dict[str, str], problem: str
) -> None:
    response = client_for(alice).get(reverse("units:compare"), query)
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert "</nav>" in html  # the site's page, with its navigation
    assert problem in html
    assert "press <strong>Compare selected versions</strong>" in html
    assert f'href="{reverse("units:list")}"' in html


def test_variant_page_offers_compare_with_original(
    alice: AbstractBaseUser, kimi: ServiceProfile
) -> None:
    client = client_for(alice)
    client.post(reverse("units:clone", args=[kimi.pk]), {"new_name": "kimi-variant"})
    variant = ServiceProfile.objects.get(name="kimi-variant")
    html = client.get(reverse("units:detail", args=[variant.pk])).content.decode()
    assert "compare with it" in html


def test_admin_lists_profiles_and_versions_read_only(kimi: ServiceProfile) -> None:
    admin_user = get_user_model().objects.create_superuser("root", "root@example.invalid", "pw")
    client = client_for(admin_user)
    assert client.get("/admin/units/serviceprofile/").status_code == 200
    assert client.get("/admin/units/profileversion/").status_code == 200
    change = client.get(f"/admin/units/serviceprofile/{kimi.pk}/change/")
    assert change.status_code == 200
    assert b'name="_save"' not in change.content


def test_list_filters_by_the_host_a_profile_was_deployed_to(client, alice) -> None:  # type: ignore[no-untyped-def]
    """The host filter: profiles with a successful deploy to that host."""

    deployed = profile_create(data=baseline(name="on-gpu-a"), created_by=alice)
    pending = profile_create(data=baseline(name="pending-gpu-a"), created_by=alice)
    profile_create(data=baseline(name="nowhere"), created_by=alice)
    host = Host.objects.create(name="gpu-a", address="127.0.0.1")
    for profile, status in ((deployed, "succeeded"), (pending, "pending")):
        DeployRequest.objects.create(
            profile_version=profile.versions.get(),
            host=host,
            unit_name=profile.name,
            unit_text="x",
            unit_sha256="0" * 64,
            status=status,
            requested_by=alice,
            expires_at=timezone.now() + timedelta(hours=1),
        )
    client.force_login(alice)
    page = client.get("/profiles/", {"host": "gpu-a"}).content.decode()
    assert "on-gpu-a" in page
    assert "pending-gpu-a" not in page and "nowhere" not in page
    everything = client.get("/profiles/").content.decode()
    assert "nowhere" in everything and '<option value="gpu-a">gpu-a</option>' in everything
