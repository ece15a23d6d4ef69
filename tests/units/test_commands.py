"""renderunit, loaddemo (seed profiles, roles), lint_profiles for `lintunits --profiles`."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.core.management.base import CommandError

from linting.options import LintOptions
from linting.reporters import render
from tests.units.factories import baseline
from units.linting import lint_profiles
from units.models import ServiceProfile
from units.roles import ensure_roles
from units.services import profile_create, profile_update

pytestmark = pytest.mark.django_db
GOLDEN = Path(__file__).parent / "golden"


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_loaddemo_creates_the_seed_profiles_once() -> None:
    run("loaddemo")
    run("loaddemo")
    base = ServiceProfile.objects.get(name="vllm-kimi-k25-int4")
    variant = ServiceProfile.objects.get(name="vllm-kimi-k25-int4-ngram")
    assert base.versions.count() == 1 and variant.versions.count() == 2
    assert variant.cloned_from == base
    assert (base.tensor_parallel_size, base.gpu_devices) == (8, "0,1,2,3,4,5,6,7")
    assert (variant.spec_method, variant.spec_num_tokens, variant.spec_prompt_lookup_max) == (
        "ngram",
        5,
        4,
    )
    assert {g.name for g in Group.objects.all()} >= {"viewer", "operator", "approver", "admin"}


def test_loaddemo_creates_an_approver_so_the_tour_can_approve_the_admins_request() -> None:
    out = run("loaddemo")
    approver = get_user_model().objects.get(username="approver")
    assert approver.check_password("specadmin-approve")
    assert approver.has_perm("deploys.approve_deployrequest")
    assert not approver.has_perm("deploys.add_host") and not approver.is_staff
    assert "approver / specadmin-approve" in out
    again = run("loaddemo")
    assert get_user_model().objects.filter(username="approver").count() == 1
    assert "approver / specadmin-approve" in again


def test_renderunit_prints_the_stored_unit() -> None:
    run("loaddemo")
    for name in ("vllm-kimi-k25-int4", "vllm-kimi-k25-int4-ngram"):
        assert run("renderunit", name) == (GOLDEN / f"{name}.service").read_text()
    # the variant's v1 is the clone of the baseline: same unit but for the header
    v1 = run("renderunit", "vllm-kimi-k25-int4-ngram", "--version", "1")
    assert "--speculative-config" not in v1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("renderunit", "nope"), "no profile named 'nope'"),
        (
            ("renderunit", "vllm-kimi-k25-int4", "--version", "9"),
            "has no version 9 (it has v1..v1)",
        ),
    ],
)
def test_renderunit_errors_exit_2(args: tuple[str, ...], message: str) -> None:
    run("loaddemo")
    with pytest.raises(CommandError) as exc:
        call_command(*args)
    assert message in str(exc.value)
    assert exc.value.returncode == 2


def test_roles_grant_model_permissions() -> None:
    groups = ensure_roles()
    ensure_roles()  # idempotent
    perms = {
        role: {f"{p.content_type.app_label}.{p.codename}" for p in g.permissions.all()}
        for role, g in groups.items()
    }
    assert perms["viewer"] == {
        "units.view_serviceprofile",
        "units.view_profileversion",
        "audit.view_auditevent",
        "deploys.view_host",
        "deploys.view_deployrequest",
        "perf.view_benchrun",
    }
    assert "perf.accept_baseline" in perms["admin"]
    assert "perf.accept_baseline" not in perms["operator"] | perms["approver"]
    assert "deploys.add_deployrequest" in perms["operator"]
    assert "deploys.approve_deployrequest" in perms["approver"]
    assert "deploys.approve_deployrequest" not in perms["operator"]
    assert "deploys.add_host" in perms["admin"] and "deploys.add_host" not in perms["operator"]
    assert "units.change_serviceprofile" in perms["operator"]
    assert "units.change_serviceprofile" not in perms["approver"]
    assert perms["admin"] >= perms["operator"]


def test_lint_profiles_shows_profiles_by_name_and_version(alice) -> None:  # type: ignore[no-untyped-def]
    profile = profile_create(data=baseline(), created_by=alice)
    profile_update(profile=profile, data={"restart": "no"}, updated_by=alice)
    report = lint_profiles(["vllm-kimi-k25-int4"], LintOptions())
    assert [fr.path for fr in report.files] == ["profile:vllm-kimi-k25-int4@v2"]
    assert [f.code for f in report.findings] == ["OP404"]  # a warning: saved, but shown
    assert report.exit_code(fail_on=report.findings[0].severity) == 1
    assert "profile:vllm-kimi-k25-int4@v2:" in render(report, "text")
    assert '"profile:vllm-kimi-k25-int4@v2"' in render(report, "json")
    assert "profile%3Avllm-kimi-k25-int4%40v2" in render(report, "sarif")  # a URI


def test_lint_profiles_unknown_name_is_an_input_error(alice) -> None:  # type: ignore[no-untyped-def]
    profile_create(data=baseline(), created_by=alice)
    report = lint_profiles(["vllm-kimi-k25-int4", "nope"], LintOptions())
    assert [e.path for e in report.input_errors] == ["profile:nope"]
    assert len(report.files) == 1
    assert report.exit_code(fail_on=report.findings[0].severity if report.findings else 3) == 2


def test_lint_profiles_without_names_lints_every_active_profile(db) -> None:  # type: ignore[no-untyped-def]
    run("loaddemo")  # on a database without real users (loaddemo refuses those)
    report = lint_profiles(None, LintOptions())
    assert [fr.path for fr in report.files] == [
        "profile:vllm-kimi-k25-int4@v1",
        "profile:vllm-kimi-k25-int4-ngram@v2",
    ]
    assert report.findings == []


def test_lint_profiles_options_can_pin_other_versions(alice) -> None:  # type: ignore[no-untyped-def]
    # `1t` is a length from vLLM 0.16.0 on: valid for the profile's target, not for 0.11.0
    profile_create(data=baseline(max_model_len="1t"), created_by=alice)
    assert lint_profiles(["vllm-kimi-k25-int4"], LintOptions()).findings == []
    pinned = lint_profiles(["vllm-kimi-k25-int4"], LintOptions(vllm_version="0.11.0"))
    assert [f.code for f in pinned.findings] == ["VL323"]
