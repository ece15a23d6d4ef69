"""What the probe may run on a host.

The attack: an operator saves a profile whose executable is `/tmp/x/vllm`, requests a
deploy (left pending, or rejected) and presses Probe; the host ran `/tmp/x/vllm --version`
as root. Now only executables of units approved and pushed there, or listed by an admin,
are run, and only when no one but root (or the login user) can change them: checked on
the host with `stat` (the test host over SSH, and this machine through LocalTransport).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import Client
from django.urls import reverse

from audit.models import AuditEvent
from deploys.jobs import runner
from deploys.models import DeployRequest, Host, PushedUnit
from deploys.probe import NO_EXECUTABLE
from deploys.selectors import host_probe_executables
from deploys.services.deploy_requests import (
    deploy_request_approve,
    deploy_request_create,
    deploy_request_reject,
)
from deploys.services.hosts import host_set_probe_executables
from hostops.channel.local import LocalTransport
from hostops.channel.ssh import SSHTransport
from hostops.executables import executable_problem, path_components
from tests.deploys.helpers import (
    People,
    approved_request,
    make_host,
    make_users,
    push_only,
    unique,
)
from tests.testhost.host import TestHost
from tests.units.factories import baseline
from units.services import profile_create

TRAP = "#!/bin/sh\ntouch /root/probe-ran-{tag}\necho 0.16.0\n"


def test_path_components_cover_every_directory() -> None:
    assert path_components("/opt/vllm/bin/vllm") == [
        "/",
        "/opt",
        "/opt/vllm",
        "/opt/vllm/bin",
        "/opt/vllm/bin/vllm",
    ]


# -- where the candidates come from ---------------------------------------------------------


def test_a_pending_or_rejected_request_gives_the_probe_nothing_to_run(
    people: People, host: Host, make_request: Callable[..., DeployRequest]
) -> None:
    trap = profile_create(
        data=baseline(name="vllm-trap", vllm_executable="/tmp/x/vllm"), created_by=people.olga
    ).versions.get()
    make_request(profile_version=trap)  # left pending
    rejected = make_request()
    deploy_request_reject(request=rejected, approver=people.alice, comment="no")
    assert host_probe_executables(host=host) == []


def test_only_pushed_units_and_the_admin_list_give_executables(
    people: People, host: Host, make_request: Callable[..., DeployRequest]
) -> None:
    request = deploy_request_approve(request=make_request(), approver=people.alice)
    PushedUnit.objects.create(
        host=host, unit_name=request.unit_name, request=request, text="x", sha256="0" * 64
    )
    host_set_probe_executables(
        host=host, executables=["/srv/venv/bin/python3", "/opt/vllm/bin/vllm"], actor=people.ada
    )
    host.refresh_from_db()
    assert host_probe_executables(host=host) == ["/opt/vllm/bin/vllm", "/srv/venv/bin/python3"]


def test_admin_list_is_audited_and_only_admins_set_it(people: People, host: Host) -> None:
    for someone in (people.olga, people.alice, people.vic):
        with pytest.raises(PermissionDenied):
            host_set_probe_executables(host=host, executables=["/opt/v/bin/vllm"], actor=someone)
    host_set_probe_executables(host=host, executables=["/opt/v/bin/vllm"], actor=people.ada)
    event = AuditEvent.objects.get(kind="host.probe_executables_set")
    assert event.actor_name == "ada"
    assert event.payload == {"executables": ["/opt/v/bin/vllm"], "previous": []}


@pytest.mark.parametrize(
    "path",
    ["vllm", "/opt/../tmp/vllm", "/opt/v/bin/sh", "/opt/v/bin/vllm\n/tmp/x", "/opt/$(id)/vllm"],
)
def test_admin_list_refuses_what_is_not_a_plain_vllm_path(
    people: People, host: Host, path: str
) -> None:
    with pytest.raises(ValidationError) as info:
        host_set_probe_executables(host=host, executables=[path], actor=people.ada)
    assert "executables" in info.value.message_dict


def test_host_page_lets_admins_edit_the_list(client: Client, people: People, host: Host) -> None:
    url = reverse("deploys:host_probe_executables", args=[host.pk])
    client.force_login(people.olga)
    assert client.post(url, {"executables": "/opt/v/bin/vllm"}).status_code == 403
    client.force_login(people.ada)
    response = client.post(url, {"executables": "/opt/v/bin/vllm\n\n"}, follow=True)
    assert "may run: /opt/v/bin/vllm" in response.content.decode()
    host.refresh_from_db()
    assert host.probe_executables == ["/opt/v/bin/vllm"]


# -- the check on the host (this machine, through LocalTransport) ---------------------------


def test_a_root_owned_system_path_through_a_symlink_is_safe_to_run() -> None:
    with LocalTransport() as local:
        assert executable_problem(local, "/usr/bin/python3") is None


def test_anything_under_a_world_writable_directory_is_refused(tmp_path: Any) -> None:
    exe = tmp_path / "vllm"
    exe.write_text("#!/bin/sh\necho 0.16.0\n")
    exe.chmod(0o755)
    with LocalTransport() as local:
        problem = executable_problem(local, str(exe))
    assert problem == "/tmp (directory, mode 1777) is writable by everyone"


def test_a_missing_executable_is_refused_without_running_anything() -> None:
    with LocalTransport() as local:
        assert "not found on the host" in (executable_problem(local, "/nonexistent/vllm") or "")


# -- the probe job against the real test host -----------------------------------------------


@pytest.fixture
def pair(transactional_db: None) -> tuple[AbstractBaseUser, AbstractBaseUser]:
    return make_users()


@pytest.fixture
def site(testhost: TestHost, pair: Any) -> Host:
    return make_host(testhost)


@pytest.fixture
def trap(testhost: TestHost) -> Iterator[Callable[[str, int], str]]:
    """`trap(directory, mode)`: a `vllm` there that leaves a file in /root when it runs."""
    made: list[str] = []

    def make(directory: str, mode: int = 0o755) -> str:
        tag = unique("t")
        path = f"{directory}/vllm"
        testhost.nsenter(["mkdir", "-p", directory], check=True)
        testhost.nsenter(["chmod", f"{mode:o}", directory], check=True)
        testhost.write_file(path, TRAP.format(tag=tag), mode=0o755)
        made.append(directory)
        return f"/root/probe-ran-{tag}"

    yield make
    for directory in made:
        testhost.nsenter(["rm", "-rf", directory])


def ran(testhost: TestHost, marker: str) -> bool:
    return testhost.nsenter(["test", "-e", marker]).returncode == 0


@pytest.mark.testhost
def test_probe_never_runs_the_executable_of_a_request_nobody_approved(
    testhost: TestHost, site: Host, pair: Any, trap: Callable[[str, int], str]
) -> None:
    marker = trap("/tmp/x", 0o755)
    version = profile_create(
        data=baseline(name=unique("trap"), vllm_executable="/tmp/x/vllm"), created_by=None
    ).versions.get()
    deploy_request_create(
        profile_version=version, host=site, requested_by=pair[0], acknowledge_warnings=True
    )  # left pending

    facts = runner.run_probe(site.pk, pair[0].pk)

    assert not ran(testhost, marker)
    assert NO_EXECUTABLE in facts["errors"]
    assert facts["vllm_version"] == ""


@pytest.mark.testhost
def test_probe_runs_the_executable_of_an_approved_and_pushed_unit(
    testhost: TestHost, site: Host, pair: Any
) -> None:
    request = approved_request(site, *pair, vllm_executable="/usr/local/bin/vllm")
    assert runner.run_deploy(request.pk, steps=push_only()) == "succeeded"

    facts = runner.run_probe(site.pk, pair[1].pk)

    assert facts["vllm_executable"] == "/usr/local/bin/vllm"
    assert facts["vllm_version"] == "0.16.0" and facts["errors"] == []


@pytest.mark.testhost
@pytest.mark.parametrize(
    ("directory", "mode", "why"),
    [
        ("/tmp/x", 0o755, "/tmp (directory, mode 1777) is writable by everyone"),
        ("/opt/open", 0o777, "/opt/open (directory, mode 0777) is writable by everyone"),
        ("/opt/team", 0o775, "/opt/team (directory, mode 0775) is writable by group 100"),
    ],
)
def test_approved_executable_that_others_can_replace_is_not_run(
    testhost: TestHost,
    site: Host,
    pair: Any,
    trap: Callable[[str, int], str],
    directory: str,
    mode: int,
    why: str,
) -> None:
    marker = trap(directory, mode)
    testhost.nsenter(["chgrp", "100", directory], check=True)
    host_set_probe_executables(
        host=site,
        executables=[f"{directory}/vllm"],
        actor=type(pair[0]).objects.create_superuser(unique("ada")),
    )

    facts = runner.run_probe(site.pk, None)

    assert not ran(testhost, marker)
    assert f"vLLM version: {directory}/vllm was not run: {why}" in facts["errors"]


@pytest.mark.testhost
def test_executable_owned_by_another_user_is_not_run(
    testhost: TestHost, ssh: SSHTransport, trap: Callable[[str, int], str]
) -> None:
    marker = trap("/opt/alice", 0o755)
    testhost.nsenter(["chown", "1000", "/opt/alice/vllm"], check=True)
    problem = executable_problem(ssh, "/opt/alice/vllm")
    assert problem == (
        "/opt/alice/vllm (file, mode 0755) belongs to uid 1000, not to root or the login user"
    )
    assert not ran(testhost, marker)
