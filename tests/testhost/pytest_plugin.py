"""pytest fixtures for real systemd + sshd test hosts (enable with `pytest_plugins`).

- `testhost` (session): one host with the 8-GPU nvidia-smi double and the vLLM double.
- `testhost_factory` (function): boot more hosts; they are torn down after the test.
Skips only when the machine cannot host containers at all (not root, no overlayfs, no
systemd-nspawn); any other boot problem is an error, so CI cannot silently skip these tests.
At session end, a check fails the run if a mount or nspawn process of this run is left.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .host import TestHost, boot_hosts, find_leftovers, reap_leftovers


def unavailable_reason() -> str | None:
    """Why test hosts cannot run here, or None."""
    if os.geteuid() != 0:
        return "test hosts need root (mount, systemd-nspawn)"
    try:
        with open("/proc/filesystems") as f:
            if not any(line.split()[-1] == "overlay" for line in f if line.strip()):
                return "the kernel has no overlayfs"
    except OSError:
        return "cannot read /proc/filesystems"
    if not shutil.which("systemd-nspawn"):
        return "systemd-nspawn missing: apt-get install -y systemd-container openssh-server"
    return None


def _require() -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="session", autouse=True)
def _testhost_leak_check() -> Iterator[None]:
    """Set up first, finalized last: after every host fixture has torn down."""
    yield
    left = find_leftovers(owner_pid=os.getpid())
    assert not left, f"test hosts of this run left behind: {left}"


@pytest.fixture(scope="session")
def testhost() -> Iterator[TestHost]:
    """One booted host shared by the session (8 GPUs in the nvidia-smi double)."""
    _require()
    reap_leftovers()
    [host] = boot_hosts(1, gpu_count=8)
    try:
        yield host
    finally:
        host.stop()


@pytest.fixture
def testhost_factory() -> Iterator[Callable[..., list[TestHost]]]:
    """`testhost_factory(count=1, lower="/", gpu_count=8, ...) -> [TestHost]`."""
    _require()
    booted: list[TestHost] = []

    def factory(count: int = 1, **kwargs: Any) -> list[TestHost]:
        hosts = boot_hosts(count, **kwargs)
        booted.extend(hosts)
        return hosts

    try:
        yield factory
    finally:
        errors = []
        for host in booted:
            try:
                host.stop()
            except Exception as exc:  # keep stopping the others
                errors.append(exc)
        if errors:
            raise errors[0]
