"""Importing one unit: fields where they write the same words back, the rest verbatim,
once per text, only for people who may add profiles; `manage.py importunit`."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from tests.units.factories import baseline
from units.importing.service import import_unit
from units.models import ServiceProfile, UnitImport
from units.rendering import render_unit
from units.roles import VIEWER, ensure_roles
from units.services import profile_update
from units.validation import validate_profile_data

pytestmark = pytest.mark.django_db

UNIT = """[Unit]
Description=Qwen on two GPUs

[Service]
User=vllm
Environment=CUDA_VISIBLE_DEVICES=0,1
Environment=HF_HOME=/srv/hf
EnvironmentFile=/etc/vllm/qwen.env
ExecStartPre=/usr/bin/nvidia-smi
ExecStart=/opt/vllm/bin/vllm serve /models/qwen --port=9000 --max-loras 4 \\
    --tensor-parallel-size 2 --api-key $KEY
LimitNOFILE=65536
Restart=always
"""


def test_a_unit_becomes_a_profile_with_its_fields_and_the_rest_verbatim(
    alice: AbstractBaseUser,
) -> None:
    result = import_unit(text=UNIT, filename="/tmp/qwen.service", actor=alice)
    data = result.version.data
    assert result.created and result.sameness.equal
    assert (data["name"], data["port"], data["tensor_parallel_size"]) == ("qwen", 9000, 2)
    assert data["gpu_devices"] == "0,1" and data["environment"] == {"HF_HOME": "/srv/hf"}
    assert data["extra_args"] == ["--max-loras", "4"]
    assert data["extra_args_verbatim"] == ["--api-key", "$KEY"]
    assert ["Service", "ExecStartPre=/usr/bin/nvidia-smi"] in data["unit_extra"]
    assert ["Service", "LimitNOFILE=65536"] in data["unit_extra"]
    assert data["restart"] == "always" and data["gpu_free_wait"] is False
    assert "--port=9000 \\" in result.version.unit_text


def test_importing_the_same_text_twice_creates_one_profile(alice: AbstractBaseUser) -> None:
    first = import_unit(text=UNIT, filename="qwen.service", actor=alice)
    again = import_unit(text=UNIT, filename="qwen.service", actor=alice)
    assert not again.created and again.record.pk == first.record.pk
    assert ServiceProfile.objects.filter(name="qwen").count() == 1
    assert UnitImport.objects.count() == 1


def test_a_viewer_cannot_import() -> None:
    victor = get_user_model().objects.create_user("victor")
    victor.groups.add(ensure_roles()[VIEWER])
    with pytest.raises(PermissionDenied):
        import_unit(text=UNIT, filename="qwen.service", actor=victor)
    assert not ServiceProfile.objects.exists()


def test_an_edit_of_an_imported_profile_keeps_its_command_lines_order(
    alice: AbstractBaseUser,
) -> None:
    result = import_unit(text=UNIT, filename="qwen.service", actor=alice)
    version = profile_update(profile=result.profile, data={"port": 9001}, updated_by=alice)
    assert version is not None
    assert "serve \\\n    /models/qwen \\\n    --port=9001 \\\n    --max-loras 4" in render_unit(
        version.data
    )


def test_a_unit_that_does_not_run_vllm_is_refused_with_the_reason(alice: AbstractBaseUser) -> None:
    text = "[Service]\nExecStart=/usr/bin/sleep 1\n"
    with pytest.raises(ValidationError, match="does not run a vLLM server"):
        import_unit(text=text, filename="sleep.service", actor=alice)


def test_an_executable_under_the_home_specifier_is_kept_as_written(
    alice: AbstractBaseUser,
) -> None:
    text = (
        "[Service]\nExecStart=%h/vllm/bin/vllm serve %h/models/qwen --port 8001\n"
        "Environment=PATH=%h/vllm/bin:/usr/bin\n"
    )
    result = import_unit(text=text, filename="qwen.service", actor=alice)
    assert result.sameness.equal, result.sameness.argv_differences
    assert result.version.data["vllm_executable"] == "%h/vllm/bin/vllm"
    assert "ExecStart=%h/vllm/bin/vllm serve \\" in result.version.unit_text


def test_an_executable_named_through_another_specifier_is_refused(
    alice: AbstractBaseUser,
) -> None:
    text = "[Service]\nExecStart=/opt/%i/bin/vllm serve /models/qwen\n"
    with pytest.raises(ValidationError, match="named through a variable or a specifier"):
        import_unit(text=text, filename="qwen.service", actor=alice)


def test_importunit_prints_each_profile_and_fails_when_one_is_not_imported(tmp_path) -> None:
    good, bad = tmp_path / "qwen.service", tmp_path / "sleep.service"
    good.write_text(UNIT, encoding="utf-8")
    bad.write_text("[Service]\nExecStart=/usr/bin/sleep 1\n", encoding="utf-8")
    out = io.StringIO()
    with pytest.raises(CommandError) as failed:
        call_command("importunit", str(good), str(bad), stdout=out)
    assert failed.value.returncode == 1
    assert "created profile qwen v1: argv equal, environment equal" in out.getvalue()
    assert "sleep.service: not imported:" in out.getvalue()
    out = io.StringIO()
    call_command("importunit", str(good), stdout=out)
    assert "imported before as profile qwen v1" in out.getvalue()


def _client(user: AbstractBaseUser) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_import_page_takes_an_upload_and_a_paste_of_the_same_text_is_the_same_import(
    alice: AbstractBaseUser,
) -> None:
    client = _client(alice)
    upload = SimpleUploadedFile("qwen.service", UNIT.encode())
    first = client.post(reverse("units:import"), {"unit_file": upload})
    assert first.status_code == 302
    page = client.get(first["Location"])
    assert "Every Exec command gets the same argv" in page.content.decode()
    pasted = client.post(
        reverse("units:import"),
        {"text": UNIT.replace("\n", "\r\n"), "filename": "qwen.service"},
        follow=True,
    )
    assert "imported before" in pasted.content.decode()
    assert UnitImport.objects.count() == 1


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"text": "[Service]\nExecStart=/usr/bin/sleep 1\n", "filename": "x.service"},
        {"text": UNIT, "filename": ""},
        {"text": UNIT, "filename": "bad name!.service"},
        {"unit_file": SimpleUploadedFile("q.service", b"\xff\xfe")},
    ],
)
def test_bad_imports_get_a_page_that_says_why_never_a_server_error(
    alice: AbstractBaseUser, body: dict
) -> None:
    response = _client(alice).post(reverse("units:import"), body)
    assert response.status_code == 400
    assert 'class="issue error"' in response.content.decode()
    assert not ServiceProfile.objects.exists()


def test_a_verbatim_word_may_not_set_what_its_field_writes_too() -> None:
    data = baseline(extra_args_verbatim=["--port", "$PORT"])
    assert any("writes too" in m for m in validate_profile_data(data)["extra_args_verbatim"])


def test_the_import_page_names_the_other_settings_that_differ_and_the_profile_links_it(
    alice: AbstractBaseUser,
) -> None:
    result = import_unit(text=UNIT, filename="qwen.service", actor=alice)
    assert "[Service] RestartSec=: not set (systemd's default) in the original, '30' rendered" in (
        result.record.setting_differences
    )
    client = _client(alice)
    page = client.get(reverse("units:import_detail", args=[result.record.pk])).content.decode()
    assert "Other settings that differ" in page
    detail = client.get(reverse("units:detail", args=[result.profile.pk])).content.decode()
    assert reverse("units:import_detail", args=[result.record.pk]) in detail
