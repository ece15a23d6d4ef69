"""Fixtures of the rollout tests without real hosts: the deploy tests' people, profile and
unit reads (tests/deploys/conftest.py), several pinned hosts, and what approving and the
coordinator hand to django-q2 recorded instead of queued."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from deploys.jobs import queue
from deploys.models import Host
from fleet import queue as fleet_queue
from tests.deploys.conftest import (  # noqa: F401 (fixtures)
    enqueued,
    on_host,
    people,
    profile,
    version,
)
from tests.deploys.helpers import fake_host_key


@dataclass
class Queued:
    deploys: list[int] = field(default_factory=list)
    advances: list[int] = field(default_factory=list)


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> Queued:
    seen = Queued()
    monkeypatch.setattr(queue, "enqueue_deploy", seen.deploys.append)
    monkeypatch.setattr(fleet_queue, "enqueue_advance", seen.advances.append)
    return seen


def make_hosts(count: int, *, prefix: str = "gpu", vllm: str = "0.16.0") -> list[Host]:
    made = []
    for i in range(count):
        key = fake_host_key()
        made.append(
            Host.objects.create(
                name=f"{prefix}-{i + 1}",
                address=f"10.0.0.{i + 10}",
                key_file="/etc/specadmin/id_ed25519",
                host_key=f"{key.key_type} {key.base64}",
                host_key_fingerprint=key.fingerprint_sha256,
                vllm_version=vllm,
                systemd_version=252,
            )
        )
    return made


@pytest.fixture
def hosts(people) -> list[Host]:  # noqa: F811 (fixture)
    return make_hosts(5)
