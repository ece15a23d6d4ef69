"""Fixtures for transport tests: SSH transports to the session's real test host."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from deploys.transports.ssh import SSHTransport
from tests.testhost.host import TestHost


def pytest_configure(config: pytest.Config) -> None:
    # Registered here so `--strict-markers` accepts it without touching pyproject.toml.
    config.addinivalue_line("markers", "gpu: needs a real NVIDIA GPU with NVML (skips otherwise)")


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
def ssh(testhost: TestHost) -> Iterator[SSHTransport]:
    """One transport reused by a module's tests, as a job reuses its connection."""
    with transport_for(testhost) as t:
        yield t
