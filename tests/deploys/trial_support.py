"""A trial on an in-memory host (tests.doubles.unit_host, tests.doubles.trial_host): the
real request service, approval, runner, trial driver, preflights, push and remove; the
service steps and the benchmark scripted per unit."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from deploys.jobs import benchmark as benchmark_hook
from deploys.jobs import runner, trial
from deploys.jobs.pipelines import TRIAL
from deploys.models import DeployRequest, Host
from deploys.running import record_read
from deploys.services import trial_requests
from deploys.services.deploy_requests import deploy_request_approve
from deploys.services.trial_requests import Candidate, trial_request_create
from hostops.channel import Transport
from tests.deploys.helpers import People, unique
from tests.deploys.what_runs_support import FAST
from tests.doubles.trial_host import TrialScript, scripted_benchmark, trial_doubles
from tests.doubles.unit_host import UnitHost, UnitHostTransport
from tests.units.factories import baseline, ngram
from units.models import ProfileVersion
from units.services import profile_create

PRODUCTION = "vllm-kimi-k25-int4"


@dataclass
class TrialSide:
    requester: Any
    approver: Any
    host: Host
    disk: UnitHost
    production: ProfileVersion
    production_unit: str = PRODUCTION
    script: TrialScript = field(default_factory=TrialScript)

    def connect(self, host: Host) -> Transport:
        return UnitHostTransport(self.disk)

    def candidate(self, name: str, **data: Any) -> ProfileVersion:
        profile = profile_create(data=ngram(name=name, **FAST, **data), created_by=self.requester)
        return profile.versions.get()

    def request(self, *candidates: ProfileVersion | Candidate, **kwargs: Any) -> DeployRequest:
        kwargs.setdefault("acknowledge_warnings", True)
        return trial_request_create(
            host=self.host,
            candidates=list(candidates),
            requested_by=self.requester,
            production_unit=self.production_unit,
            **kwargs,
        )

    def run(self, request: DeployRequest) -> DeployRequest:
        request = deploy_request_approve(request=request, approver=self.approver)
        runner.run_deploy(
            request.pk, connect=self.connect, trial=TRIAL.mapped(trial_doubles(self.script))
        )
        request.refresh_from_db()
        return request

    def active(self) -> set[str]:
        return set(self.disk.active)

    def file(self, unit_name: str) -> bytes | None:
        return self.disk.unit_file(unit_name)


def make_trial_side(requester: Any, approver: Any, production_unit: str = PRODUCTION) -> TrialSide:
    """Production `production_unit` (a known version) running on an in-memory host."""
    data = baseline(name=production_unit, **FAST)
    version = profile_create(data=data, created_by=requester).versions.get()
    disk = UnitHost()
    path = disk.path(f"{production_unit}.service")
    disk.files[path] = version.unit_text.encode("utf-8")
    disk.reload()
    disk.active.add(f"{production_unit}.service")
    host = Host.objects.create(name=unique("gpu"), address="localhost", transport="local")
    # as a probe records it: what runs where (deploys.running) knows production's text
    record_read(host=host, unit_name=production_unit, data=disk.files[path], step="probe")
    return TrialSide(requester, approver, host, disk, version, production_unit)


def use_trial_side(monkeypatch: pytest.MonkeyPatch, side: TrialSide) -> None:
    """Requests and interrupted trials read `side`'s host; cancels are seen at once; the
    benchmark is the side's script (call `unregister` after)."""
    monkeypatch.setattr(trial_requests, "transport_for", side.connect)
    monkeypatch.setattr(trial, "transport_for", side.connect)
    monkeypatch.setattr(runner, "CANCEL_POLL_S", 0.0)
    benchmark_hook.register(scripted_benchmark(side.script))


@pytest.fixture
def trial_side(people: People, monkeypatch: pytest.MonkeyPatch) -> Iterator[TrialSide]:
    """Production `vllm-kimi-k25-int4` (a known version) running on an in-memory host;
    olga requests, alice approves."""
    before = benchmark_hook.registered()
    side = make_trial_side(people.olga, people.alice)
    use_trial_side(monkeypatch, side)
    yield side
    benchmark_hook.register(before)


__all__ = ["PRODUCTION", "TrialSide", "make_trial_side", "trial_side", "use_trial_side"]
