"""Units specadmin must never overwrite: the host's base system by
name, and unit files it did not write unless an admin adopted that exact file.

Service and view tests read the host's unit through `on_host` (a dict); the job tests at
the end run the real preflight/push against the test host.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from audit.models import AuditEvent
from deploys.job_settings import job_settings, settings_sha256
from deploys.jobs import runner
from deploys.models import DeployRequest, Host, PushedUnit, UnitAdoption
from deploys.selectors import rendered_text
from deploys.services.unit_adoptions import unit_adopt
from deploys.unit_policy import denied_unit_reason
from hostops.channel.push import sha256_hex
from tests.deploys.helpers import (
    UNIT_DIR,
    FakeHosts,
    People,
    make_host,
    make_users,
    push_only,
    unique,
)
from tests.testhost.host import TestHost
from tests.units.factories import baseline
from units.services import profile_create

FOREIGN = b"[Service]\nExecStart=/usr/local/bin/legacy-llm --port 8000\n"


@pytest.mark.parametrize(
    "name",
    ["sshd", "ssh", "systemd-journald", "systemd-logind", "getty", "serial-getty", "dbus",
     "dbus-broker", "cron", "nvidia-persistenced", "NetworkManager", "polkit"],
)  # fmt: skip
def test_request_for_a_base_system_unit_is_refused_before_the_host_is_read(
    make_request: Callable[..., DeployRequest], on_host: FakeHosts, name: str
) -> None:
    with pytest.raises(ValidationError) as info:
        make_request(unit_name=name)
    assert "deny list" in info.value.message_dict["unit_name"][0]
    assert on_host.reads == []
    assert not DeployRequest.objects.exists()


def test_vllm_unit_names_are_not_on_the_deny_list() -> None:
    for name in ("vllm-kimi-k25-int4", "vllm", "llm-sshd-proxy", "my-systemd-thing"):
        assert denied_unit_reason(name) is None


def test_profile_named_sshd_cannot_be_deployed_under_its_own_name(
    people: People, make_request: Callable[..., DeployRequest], on_host: FakeHosts
) -> None:
    profile = profile_create(data=baseline(name="sshd"), created_by=people.olga)
    with pytest.raises(ValidationError) as info:
        make_request(profile_version=profile.versions.get())
    assert "sshd.service belongs to the host's base system" in str(info.value)
    assert on_host.reads == []


def test_request_page_refuses_the_profile_name_default_before_reading_the_host(
    client: Client, people: People, host: Host, on_host: FakeHosts
) -> None:
    version = profile_create(data=baseline(name="sshd"), created_by=people.olga).versions.get()
    client.force_login(people.olga)
    response = client.post(
        reverse("deploys:request_new"), {"profile_version": version.pk, "host": host.pk}
    )
    assert response.status_code == 200
    assert "deny list" in response.content.decode()
    assert on_host.reads == []


def test_unit_file_specadmin_did_not_write_is_refused(
    make_request: Callable[..., DeployRequest], on_host: FakeHosts
) -> None:
    on_host.files["vllm-kimi-k25-int4"] = FOREIGN
    with pytest.raises(ValidationError) as info:
        make_request()
    message = info.value.message_dict["unit_name"][0]
    assert "specadmin did not write" in message and "adopts" in message
    assert not DeployRequest.objects.exists()


def test_admin_adoption_lets_exactly_that_file_be_replaced_and_is_audited(
    people: People,
    host: Host,
    make_request: Callable[..., DeployRequest],
    on_host: FakeHosts,
) -> None:
    on_host.files["vllm-kimi-k25-int4"] = FOREIGN
    adoption = unit_adopt(
        host=host, unit_name="vllm-kimi-k25-int4", actor=people.ada, comment="old hand-made unit"
    )
    event = AuditEvent.objects.get(kind="unit.adopted")
    assert event.actor_name == "ada" and event.host_name == "gpu-a"
    assert event.payload["sha256"] == adoption.sha256
    assert make_request().host_unit_text == FOREIGN.decode()

    on_host.files["vllm-kimi-k25-int4"] = FOREIGN + b"# edited by hand since\n"
    with pytest.raises(ValidationError, match="specadmin did not write"):
        make_request()


def test_only_admins_adopt_and_never_a_denied_name(
    people: People, host: Host, on_host: FakeHosts
) -> None:
    on_host.files["legacy"] = FOREIGN
    for someone in (people.olga, people.alice, people.vic):
        with pytest.raises(PermissionDenied):
            unit_adopt(host=host, unit_name="legacy", actor=someone, comment="mine")
    on_host.files["sshd"] = FOREIGN
    with pytest.raises(ValidationError, match="deny list"):
        unit_adopt(host=host, unit_name="sshd", actor=people.ada, comment="please")
    with pytest.raises(ValidationError, match="nothing to adopt"):
        unit_adopt(host=host, unit_name="absent", actor=people.ada, comment="x")
    with pytest.raises(ValidationError, match="Say why"):
        unit_adopt(host=host, unit_name="legacy", actor=people.ada, comment="  ")
    assert not UnitAdoption.objects.exists()
    assert not AuditEvent.objects.filter(kind="unit.adopted").exists()


def test_host_page_adopts_a_unit_for_admins_only(
    client: Client, people: People, host: Host, on_host: FakeHosts
) -> None:
    on_host.files["legacy"] = FOREIGN
    url = reverse("deploys:host_adopt_unit", args=[host.pk])
    client.force_login(people.olga)
    assert client.post(url, {"unit_name": "legacy", "comment": "x"}).status_code == 403
    client.force_login(people.ada)
    page = client.get(reverse("deploys:host_detail", args=[host.pk])).content.decode()
    assert "Adopt this unit file" in page
    response = client.post(url, {"unit_name": "legacy", "comment": "hand-made"}, follow=True)
    assert "legacy.service on gpu-a adopted" in response.content.decode()
    assert UnitAdoption.objects.get().adopted_by == people.ada


def test_a_refused_adoption_keeps_the_reason_typed_and_says_what_is_wrong(
    client: Client, people: People, host: Host, on_host: FakeHosts
) -> None:
    # It used to redirect: the reason was gone, the error read "unit_name: …".
    client.force_login(people.ada)
    url = reverse("deploys:host_adopt_unit", args=[host.pk])
    why = "hand-made by the previous team, replaced by the n-gram profile"
    response = client.post(url, {"unit_name": "absent", "comment": why})
    assert response.status_code == 400
    page = response.content.decode()
    assert f">\n{why}</textarea>" in page and 'value="absent"' in page
    assert "nothing to adopt" in page
    assert not UnitAdoption.objects.exists()


# -- the job re-checks right before writing (real test host) -------------------------------


@pytest.fixture
def pair(transactional_db: None) -> tuple[AbstractBaseUser, AbstractBaseUser]:
    return make_users()


@pytest.fixture
def site(testhost: TestHost, pair: Any) -> Host:
    return make_host(testhost)


def request_as_stored(
    site: Host, pair: Any, *, unit_name: str, host_text: bytes | None
) -> DeployRequest:
    """An approved request as a database written before these rules would hold it (or
    as an attacker with database access writes it): the job must still refuse."""
    requester, approver = pair
    version = profile_create(data=baseline(name=unique("legacy")), created_by=None).versions.get()
    text = rendered_text(profile_version=version)
    sha = sha256_hex(text.encode())
    settings = job_settings(profile_version=version)
    return DeployRequest.objects.create(
        job_settings=settings,
        job_settings_sha256=settings_sha256(settings),
        approved_settings_sha256=settings_sha256(settings),
        profile_version=version,
        host=site,
        unit_name=unit_name,
        unit_text=text,
        unit_sha256=sha,
        host_unit_text="" if host_text is None else host_text.decode(),
        host_unit_sha256="" if host_text is None else sha256_hex(host_text),
        status=DeployRequest.Status.APPROVED,
        approved_sha256=sha,
        requested_by=requester,
        decided_by=approver,
        decided_at=timezone.now(),
        expires_at=timezone.now() + timedelta(hours=1),
    )


@pytest.mark.testhost
def test_job_refuses_a_denied_unit_name_stored_in_an_approved_request(
    testhost: TestHost, site: Host, pair: Any
) -> None:
    name = unique("systemd-specadmin-test")
    request = request_as_stored(site, pair, unit_name=name, host_text=None)

    assert runner.run_deploy(request.pk, steps=push_only()) == "void"

    request.refresh_from_db()
    assert "deny list" in request.status_reason
    assert testhost.nsenter(["test", "-e", f"{UNIT_DIR}/{name}.service"]).returncode == 1
    assert not PushedUnit.objects.exists()


@pytest.mark.testhost
def test_job_refuses_to_overwrite_a_foreign_unit_until_an_admin_adopts_it(
    testhost: TestHost, site: Host, pair: Any
) -> None:
    name = unique("legacy-llm")
    path = f"{UNIT_DIR}/{name}.service"
    testhost.write_file(path, FOREIGN.decode())
    request = request_as_stored(site, pair, unit_name=name, host_text=FOREIGN)

    assert runner.run_deploy(request.pk, steps=push_only()) == "void"
    request.refresh_from_db()
    assert "specadmin did not write" in request.status_reason
    assert testhost.read_file(path) == FOREIGN.decode()

    admin = get_user_model().objects.create_superuser(unique("ada"))
    unit_adopt(host=site, unit_name=name, actor=admin, comment="replacing the hand-made unit")
    again = request_as_stored(site, pair, unit_name=name, host_text=FOREIGN)
    assert runner.run_deploy(again.pk, steps=push_only()) == "succeeded"
    assert testhost.read_file(path) == again.unit_text
