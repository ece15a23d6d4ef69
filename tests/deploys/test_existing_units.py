"""Units systemd already loads from elsewhere (deploys/existing_units.py): a request for a
name that exists anywhere systemd loads units from (a vendor unit in /lib/systemd/system,
drop-ins) needs an admin's adoption, the request page shows those files, and the job's
preflight asks systemd again. On the real test host: its logrotate.service lives in
/lib/systemd/system."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from deploys.existing_units import existing_unit
from deploys.jobs import queue, runner
from deploys.models import DeployRequest, Host, JobStep
from deploys.services.deploy_requests import deploy_request_create
from deploys.services.unit_adoptions import unit_adopt
from hostops.unit_paths import is_unit_path
from tests.deploys.conftest import transport_for
from tests.deploys.helpers import approved_request, make_host, make_users, unique
from tests.testhost.host import TestHost
from tests.units.factories import baseline
from units.models import ProfileVersion
from units.services import profile_create

VENDOR = "/lib/systemd/system/logrotate.service"


@pytest.fixture
def site(testhost: TestHost, db: None) -> Host:
    return make_host(testhost)


@pytest.fixture
def users(db: None) -> tuple[AbstractBaseUser, AbstractBaseUser]:
    return make_users()  # olga requests, adam (an admin) adopts and approves


def version_named(name: str) -> ProfileVersion:
    return profile_create(data=baseline(name=name), created_by=None).versions.get()


@pytest.mark.testhost
def test_systemd_names_the_vendor_unit_a_push_would_shadow(testhost: TestHost) -> None:
    with transport_for(testhost) as transport:
        found = existing_unit(transport, "logrotate")
    assert found.load_state == "loaded"
    [vendor] = found.others
    assert (vendor.path, vendor.kind) == (VENDOR, "unit file")
    assert "Description=Rotate log files" in vendor.text
    assert vendor.size == len(testhost.nsenter(["cat", VENDOR]).stdout)


@pytest.mark.testhost
def test_a_request_for_logrotate_needs_adoption_and_shows_the_vendor_file(
    site: Host, users: tuple[AbstractBaseUser, AbstractBaseUser]
) -> None:
    olga, adam = users
    version = version_named("logrotate")
    client = Client()
    client.force_login(olga)
    form = {"profile_version": version.pk, "host": site.pk, "acknowledge_warnings": "on"}
    page = client.post(reverse("deploys:request_new"), form | {"step": "submit"})
    text = page.content.decode()
    assert (
        f"systemd on {site.name} already loads logrotate.service from {VENDOR} (unit file), "
        "which specadmin did not write"
    ) in text
    assert f"<code>{VENDOR}</code>" in text and "Description=Rotate log files" in text
    assert not DeployRequest.objects.exists()

    unit_adopt(host=site, unit_name="logrotate", actor=adam, comment="we run it ourselves")
    request = deploy_request_create(
        profile_version=version, host=site, requested_by=olga, acknowledge_warnings=True
    )
    assert request.host_unit_sha256 == ""  # nothing in /etc/systemd/system …
    assert [f["path"] for f in request.host_loaded_unit["files"]] == [VENDOR]  # … but this
    client.force_login(adam)
    detail = client.get(reverse("deploys:request_detail", args=[request.pk])).content.decode()
    assert f"<code>{VENDOR}</code>" in detail and "Description=Rotate log files" in detail
    assert f"{site.name}:{VENDOR} (loaded now; the push shadows it)" in detail


@pytest.mark.testhost
def test_a_drop_in_for_the_name_needs_adoption_too(
    testhost: TestHost, site: Host, users: tuple[AbstractBaseUser, AbstractBaseUser]
) -> None:
    olga, adam = users
    name = unique("vllm-dropin")
    path = f"/etc/systemd/system/{name}.service.d/override.conf"
    testhost.nsenter(["mkdir", "-p", path.rsplit("/", 1)[0]])
    testhost.write_file(path, "[Service]\nEnvironment=CUDA_VISIBLE_DEVICES=7\n")
    try:
        version = version_named(name)
        with pytest.raises(ValidationError, match=rf"from {path} \(drop-in\)"):
            deploy_request_create(
                profile_version=version, host=site, requested_by=olga, acknowledge_warnings=True
            )
        unit_adopt(host=site, unit_name=name, actor=adam, comment="the override is ours")
        request = deploy_request_create(
            profile_version=version, host=site, requested_by=olga, acknowledge_warnings=True
        )
        assert request.pk is not None
        # The drop-in changes: the adoption no longer covers it.
        testhost.write_file(path, "[Service]\nEnvironment=CUDA_VISIBLE_DEVICES=0\n")
        testhost.systemctl("daemon-reload")
        with pytest.raises(ValidationError, match="drop-in"):
            deploy_request_create(
                profile_version=version, host=site, requested_by=olga, acknowledge_warnings=True
            )
    finally:
        testhost.nsenter(["rm", "-rf", path.rsplit("/", 1)[0]])
        testhost.systemctl("daemon-reload")


@pytest.mark.parametrize(
    ("path", "readable"),
    [
        ("/lib/systemd/system/x.service", True),
        ("/run/systemd/system/x.service", True),
        ("/etc/systemd/system/x.service.d/10-gpu.conf", True),
        ("/etc/shadow", False),
        ("/lib/systemd/system/../../../etc/shadow", False),
        ("/lib/systemd/system/y.service", False),
        ("/home/vllm/x.service", False),
        ("/etc/systemd/system/x.service.d/notes.txt", False),
        ("lib/systemd/system/x.service", False),
    ],
)
def test_only_files_named_after_the_unit_in_systemds_directories_are_read(
    path: str, readable: bool
) -> None:
    assert is_unit_path(path, "x.service") == readable


@pytest.mark.testhost
@pytest.mark.parametrize(
    ("appeared", "kind"),
    [
        ("/etc/systemd/system/{unit}.d/override.conf", "drop-in"),
        ("/usr/local/lib/systemd/system/{unit}", "unit file"),
    ],
)
def test_a_unit_file_or_drop_in_that_appears_after_the_approval_fails_preflight(
    testhost: TestHost,
    transactional_db: None,
    monkeypatch: pytest.MonkeyPatch,
    appeared: str,
    kind: str,
) -> None:
    """Between the request and the job someone adds a file systemd loads under the name:
    the job's preflight asks systemd again and refuses, as the request would have."""
    monkeypatch.setattr(queue, "async_task", lambda *args, **kwargs: None)
    olga, adam = make_users()
    site = make_host(testhost)
    name = unique("vllm-late")
    request = approved_request(site, olga, adam, name=name)
    path = appeared.format(unit=f"{name}.service")
    testhost.nsenter(["mkdir", "-p", path.rsplit("/", 1)[0]])
    testhost.write_file(path, "[Service]\nEnvironment=CUDA_VISIBLE_DEVICES=7\n")
    try:
        assert runner.run_deploy(request.pk) == DeployRequest.Status.VOID
    finally:
        testhost.nsenter(["rm", "-rf", path if kind == "unit file" else path.rsplit("/", 1)[0]])
        unit = f"/etc/systemd/system/{name}.service"  # only if the job went on (a bug)
        testhost.nsenter(["sh", "-c", f"systemctl stop {name}.service; rm -f {unit} {unit}.*"])
        testhost.systemctl("daemon-reload")
    request.refresh_from_db()
    assert request.status_reason.startswith(
        f"preflight: systemd on {site.name} already loads {name}.service from {path} ({kind}), "
        "which specadmin did not write"
    ), request.status_reason
    assert [s.name for s in JobStep.objects.filter(request=request, status="failed")] == [
        "preflight"
    ]
    on_host = testhost.nsenter(["test", "-e", f"/etc/systemd/system/{name}.service"])
    assert on_host.returncode != 0, "nothing was pushed"
