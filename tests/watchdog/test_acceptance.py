"""Speculative acceptance on live traffic against the benchmark's figure (perf), through
whole checks of a fake host whose /metrics counters move between them."""

from __future__ import annotations

from typing import Any

import pytest

from perf.models import BenchRun
from tests.doubles.watch_host import FakeHostTransport, FakeServer
from tests.units.factories import baseline, ngram
from tests.watchdog.helpers import UNIT, healthy_fake
from tests.watchdog.test_pages import deployed
from watchdog.models import Incident
from watchdog.services import check_host
from watchdog.targets import watched_targets

pytestmark = pytest.mark.django_db


def bench(host: Any, version: Any, rate: float | None) -> None:
    BenchRun.objects.create(
        profile=version.profile,
        profile_version=version,
        host=host,
        engine="servebench",
        settings={},
        settings_key="k",
        result={},
        acceptance_rate=rate,
    )


def test_a_speculative_units_target_carries_the_benchmarked_rate_and_a_plain_one_none() -> None:
    host, version, _ = deployed(data=ngram(name=UNIT))
    bench(host, version, 62.5)
    [target] = watched_targets(host)
    assert target.expected_acceptance == 62.5
    assert target.base_url.startswith("http://127.0.0.1:")
    plain, plain_version, _ = deployed("gpu2", data=baseline(name="vllm-b"))
    bench(plain, plain_version, 62.5)
    assert watched_targets(plain)[0].expected_acceptance is None


def test_acceptance_falling_far_below_the_benchmark_opens_and_recovering_closes() -> None:
    host, version, text = deployed(data=ngram(name=UNIT))
    bench(host, version, 60.0)
    [target] = watched_targets(host)
    port = int(target.base_url.rsplit(":", 1)[1])
    fake = healthy_fake(text)
    server = fake.servers[port] = FakeServer(running=2, generated=0, draft_tokens=0, accepted=0)
    history: dict[str, Any] = {}
    clock = [0.0]

    def check(drafted: int, accepted: int) -> None:
        nonlocal history
        clock[0] += 30
        server.generated += 1000
        server.draft_tokens = (server.draft_tokens or 0) + drafted
        server.accepted = (server.accepted or 0) + accepted
        evaluation, _, _ = check_host(
            host=host, transport=FakeHostTransport(fake), history=history, clock=lambda: clock[0]
        )
        history = evaluation.history

    check(0, 0)
    for _ in range(4):
        check(400, 40)  # 10 % accepted against 60 % benchmarked
    [incident] = Incident.objects.filter(kind="acceptance_collapse", closed_at__isnull=True)
    assert incident.evidence["rate_percent"] == 10.0
    for _ in range(12):
        check(400, 240)  # back to 60 %: the 5-minute window forgets the collapse
    incident.refresh_from_db()
    assert not incident.is_open
