"""Fixtures shared by the deploy tests (plain helpers: helpers.py).

- Without a real host (services, views): olga requests, alice and bob approve, ada is an
  admin, vic only looks; `host` is a pinned SSH host whose unit file reads come from
  `on_host` (a dict) instead of the network; `enqueued` records what approving hands to
  the job layer.
- With the session's real test host: SSH transports to it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

from deploys import existing_units, selectors
from deploys.jobs import queue
from deploys.models import DeployRequest, Host
from deploys.services.deploy_requests import deploy_request_create
from hostops.channel.ssh import SSHTransport
from tests.deploys.helpers import OLD_UNIT, Enqueued, FakeHosts, People, fake_host_key
from tests.deploys.qcluster_support import (  # noqa: F401  (fixtures of the qcluster tests)
    jobhost,
    postgres_redis,
    qsetup,
    sqlite_orm,
    start_clusters,
)
from tests.deploys.trial_support import trial_side  # noqa: F401  (fixture of the trial tests)
from tests.testhost.host import TestHost, boot_hosts
from tests.testhost.pytest_plugin import unavailable_reason
from tests.units.factories import baseline
from units.models import ProfileVersion, ServiceProfile
from units.roles import ADMIN, APPROVER, OPERATOR, VIEWER, ensure_roles
from units.services import profile_create


def pytest_configure(config: pytest.Config) -> None:
    # Registered here so `--strict-markers` accepts it without touching pyproject.toml.
    config.addinivalue_line("markers", "gpu: needs a real NVIDIA GPU with NVML (skips otherwise)")


# -- without a real host -------------------------------------------------------------------


def _user(name: str, role: str) -> AbstractBaseUser:
    user = get_user_model().objects.create_user(name)  # no password: hashing is slow
    user.groups.add(ensure_roles()[role])
    return get_user_model().objects.get(pk=user.pk)  # fresh permission cache


@pytest.fixture
def people(db: None) -> People:
    return People(
        olga=_user("olga", OPERATOR),
        alice=_user("alice", APPROVER),
        bob=_user("bob", APPROVER),
        ada=_user("ada", ADMIN),
        vic=_user("vic", VIEWER),
    )


@pytest.fixture
def profile(people: People) -> ServiceProfile:
    return profile_create(data=baseline(), created_by=people.olga)


@pytest.fixture
def version(profile: ServiceProfile) -> ProfileVersion:
    return profile.versions.get()


@pytest.fixture
def host(people: People) -> Host:
    key = fake_host_key()
    return Host.objects.create(
        name="gpu-a",
        address="10.0.0.7",
        key_file="/etc/specadmin/id_ed25519",
        host_key=f"{key.key_type} {key.base64}",
        host_key_fingerprint=key.fingerprint_sha256,
    )


@pytest.fixture
def on_host(monkeypatch: pytest.MonkeyPatch) -> FakeHosts:
    fake = FakeHosts(files={"vllm-kimi-k25-int4": OLD_UNIT})
    monkeypatch.setattr(selectors, "read_host_unit", fake.read)
    monkeypatch.setattr(existing_units, "read_existing_unit", fake.loaded)
    return fake


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> Enqueued:
    """Record what would be handed to the job layer (`deploys.jobs.queue`)."""
    seen = Enqueued()
    monkeypatch.setattr(queue, "enqueue_deploy", seen.deploys.append)
    monkeypatch.setattr(queue, "enqueue_probe", lambda h, a: seen.probes.append((h, a)))
    return seen


@pytest.fixture
def make_request(
    people: People, version: ProfileVersion, host: Host, on_host: FakeHosts
) -> Callable[..., DeployRequest]:
    def make(**kwargs: Any) -> DeployRequest:
        kwargs.setdefault("profile_version", version)
        kwargs.setdefault("host", host)
        kwargs.setdefault("requested_by", people.olga)
        return deploy_request_create(**kwargs)

    return make


# -- with the real test host ---------------------------------------------------------------


def transport_for(host: TestHost, **kwargs: Any) -> SSHTransport:
    kwargs.setdefault("pinned_host_key", host.host_key)
    kwargs.setdefault("key_filename", host.key_path)
    kwargs.setdefault("connect_timeout", 10)
    kwargs.setdefault("command_timeout", 60)
    return SSHTransport(host.host, host.port, host.user, **kwargs)


@pytest.fixture
def make_transport(testhost: TestHost) -> Iterator[Callable[..., SSHTransport]]:
    """`make_transport(**overrides)`: a fresh SSHTransport, closed after the test."""
    made: list[SSHTransport] = []

    def make(**kwargs: Any) -> SSHTransport:
        t = transport_for(testhost, **kwargs)
        made.append(t)
        return t

    yield make
    for t in made:
        t.close()


@pytest.fixture(scope="module")
def module_testhost() -> Iterator[TestHost]:
    """A host of the module's own: for tests that change GPU state or leave services
    running, which the session's shared host must not see."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    [host] = boot_hosts(1, gpu_count=8)
    try:
        assert host.nsenter(["useradd", "--no-create-home", "alice"]).returncode == 0
        yield host
    finally:
        host.stop()


@pytest.fixture(scope="module")
def ssh(testhost: TestHost) -> Iterator[SSHTransport]:
    """One transport reused by a module's tests, as a job reuses its connection."""
    with transport_for(testhost) as t:
        yield t
