"""As whom the vLLM check runs, on the real test host (its `vllm` user, uid from the host's
/etc/passwd): the service account's code never runs as uid 0 through the check, with an
approver or on the "restarts need no approval" path without one.

The hostile layout is what a service account could leave behind: a `sitecustomize.py`
on a PYTHONPATH the profile sets, and the `python3` behind the unit's executable, both
owned by `vllm`; each writes a marker file named with the uid it ran as.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser

from deploys.jobs import queue, runner
from deploys.jobs.pipelines import DAEMON_RELOAD, PREFLIGHT, PUSH, VLLM_CHECK
from deploys.models import DeployRequest, Host, JobStep
from deploys.services.unit_requests import (
    host_set_restarts_without_approval,
    restart_request_create,
)
from tests.deploys.helpers import (
    UNIT_DIR,
    approved_request,
    double_profile,
    make_host,
    make_users,
    unique,
)
from tests.testhost.host import TestHost

pytestmark = pytest.mark.testhost

HOSTILE = "/opt/specadmin-hostile"
CHECKED_PUSH = (PREFLIGHT, VLLM_CHECK, PUSH, DAEMON_RELOAD)
CHECK_ONLY = (PREFLIGHT, VLLM_CHECK)
_SITECUSTOMIZE = """import os
open(f"/var/tmp/specadmin-marker-{token}-site-{{os.getuid()}}", "a").write("ran\\n")
"""
_PYTHON = """#!/bin/sh
echo ran >> "/var/tmp/specadmin-marker-{token}-python-$(id -u)"
exec {python} "$@"
"""
# What pip writes for a console script, naming the hostile python (install.py's pattern).
_ENTRY_POINT = """#!{hostile}/bin/python3
import sys
sys.path.insert(0, "/usr/local/lib/gpu-double")
from doubles.vllm_double import main
sys.exit(main())
"""


@pytest.fixture
def pair(transactional_db: None) -> tuple[AbstractBaseUser, AbstractBaseUser]:
    return make_users()


@pytest.fixture(autouse=True)
def queued(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queue, "async_task", lambda *args, **kwargs: None)


@pytest.fixture
def site(testhost: TestHost, pair: Any) -> Host:
    return make_host(testhost)


@pytest.fixture
def hostile(testhost: TestHost) -> Iterator[str]:
    """The layout, owned by `vllm`; yields the token its markers carry."""
    token = unique("t")
    files = {
        f"{HOSTILE}/site/sitecustomize.py": (_SITECUSTOMIZE.format(token=token), 0o644),
        f"{HOSTILE}/bin/python3": (_PYTHON.format(token=token, python=testhost.python), 0o755),
        f"{HOSTILE}/bin/vllm": (_ENTRY_POINT.format(hostile=HOSTILE), 0o755),
    }
    for path, (text, mode) in files.items():
        testhost.write_file(path, text, mode=mode)
    testhost.nsenter(["chown", "-R", "vllm:vllm", HOSTILE], check=True)
    try:
        yield token
    finally:
        testhost.nsenter(["sh", "-c", f"rm -rf {HOSTILE} /var/tmp/specadmin-marker-{token}-*"])


def markers(host: TestHost, token: str) -> dict[str, str]:
    """Marker files of this test → the uid they were written by."""
    script = f'for f in /var/tmp/specadmin-marker-{token}-*; do [ -e "$f" ] && echo "$f"; done'
    names = host.nsenter(["sh", "-c", script]).stdout.split()
    return {name.rsplit("-", 2)[-2]: name.rsplit("-", 1)[-1] for name in names}


def vllm_uid(host: TestHost) -> str:
    return host.nsenter(["id", "-u", "vllm"], check=True).stdout.strip()


@contextlib.contextmanager
def removed_after(host: TestHost, request: DeployRequest) -> Iterator[None]:
    try:
        yield
    finally:
        host.nsenter(["sh", "-c", f"rm -f {UNIT_DIR}/{request.unit_name}.service*"])
        host.systemctl("daemon-reload")


def run(request: DeployRequest, steps: Any) -> DeployRequest:
    runner.run_deploy(request.pk, steps=steps)
    request.refresh_from_db()
    return request


def check_step(request: DeployRequest) -> JobStep:
    return JobStep.objects.get(request=request, name="vllm_check")


def hostile_profile(**overrides: Any) -> dict[str, Any]:
    return double_profile(
        name=unique("vllm-ident"), vllm_executable=f"{HOSTILE}/bin/vllm", **overrides
    )


def test_the_check_runs_as_the_units_user_with_its_pythonpath_never_as_root(
    testhost: TestHost, site: Host, pair: Any, hostile: str
) -> None:
    data = hostile_profile(user="vllm", group="vllm", environment={"PYTHONPATH": f"{HOSTILE}/site"})
    first = run(approved_request(site, *pair, data=data), CHECKED_PUSH)
    with removed_after(testhost, first):
        assert first.status == "succeeded", first.status_reason
        check = check_step(first)
        assert check.status == "succeeded", check.result
        assert check.reads["vllm_check"]["user"] == "vllm"
        uid = vllm_uid(testhost)
        assert markers(testhost, hostile) == {"site": uid, "python": uid}, (
            "the service account's sitecustomize and python ran, as the service account"
        )

        # "Restarts need no approval": no approver at all, and still never as root.
        host_set_restarts_without_approval(host=site, value=True, actor=pair[1])
        restart = restart_request_create(host=site, unit_name=first.unit_name, requested_by=pair[0])
        assert restart.status == "approved" and restart.decided_by is None
        testhost.nsenter(["sh", "-c", f"rm -f /var/tmp/specadmin-marker-{hostile}-*"])
        restart = run(restart, CHECK_ONLY)
        assert restart.status == "succeeded", restart.status_reason
        assert check_step(restart).reads["vllm_check"]["user"] == "vllm"
        assert markers(testhost, hostile) == {"site": uid, "python": uid}


def test_a_unit_that_runs_as_root_is_not_checked_with_its_pythonpath(
    testhost: TestHost, site: Host, pair: Any, hostile: str
) -> None:
    data = hostile_profile(user="", environment={"PYTHONPATH": f"{HOSTILE}/site"})
    first = run(approved_request(site, *pair, data=data), CHECKED_PUSH)
    with removed_after(testhost, first):
        check = check_step(first)
        assert check.status == "skipped", check.result
        reason = check.result["reason"]
        assert "runs as root and sets PYTHONPATH" in reason, reason
        assert markers(testhost, hostile) == {}, "nothing of the service account ran"

        host_set_restarts_without_approval(host=site, value=True, actor=pair[1])
        restart = restart_request_create(host=site, unit_name=first.unit_name, requested_by=pair[0])
        restart = run(restart, CHECK_ONLY)
        assert check_step(restart).status == "skipped"
        assert markers(testhost, hostile) == {}


def test_a_unit_that_runs_as_root_is_not_checked_with_a_python_the_service_account_owns(
    testhost: TestHost, site: Host, pair: Any, hostile: str
) -> None:
    first = run(approved_request(site, *pair, data=hostile_profile(user="")), CHECKED_PUSH)
    with removed_after(testhost, first):
        check = check_step(first)
        assert check.status == "skipped", check.result
        # The probe's rule, word for word: a path the service account owns is not run.
        uid = vllm_uid(testhost)
        assert f"belongs to uid {uid}, not to root or the login user" in check.result["reason"]
        assert markers(testhost, hostile) == {}
