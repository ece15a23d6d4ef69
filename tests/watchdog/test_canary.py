"""The one-token canary request (watchdog.canary): asked on the host with curl, as /metrics
is, of the vLLM double serving in this process; judged by watchdog.checks.check_canary."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from hostops.channel.local import LocalTransport
from tests.doubles.vllm_double_config import DoubleConfig
from tests.doubles.vllm_double_http import ServerState, serving
from watchdog import checks
from watchdog.canary import CanaryResult, ask_canary
from watchdog.reader import Target

UNIT = "vllm-a"


@contextmanager
def double(**knobs: object) -> Iterator[tuple[Target, ServerState]]:
    cfg = DoubleConfig(ttft_ms=5.0, itl_ms=1.0)
    for name, value in knobs.items():
        setattr(cfg, name, value)
    with serving(cfg, model="m") as (base_url, state):
        yield Target(unit=UNIT, approved_text="", base_url=base_url, model="m"), state


def test_a_healthy_server_answers_the_canary_with_one_token() -> None:
    with double() as (target, _):
        result = ask_canary(LocalTransport(), target, deadline_s=5)
    assert (result.health, result.status, result.error) == (200, 200, "")
    assert result.seconds < 5
    assert checks.check_canary(UNIT, result).findings == ()


def test_an_engine_that_gives_no_token_by_the_deadline_is_hung_while_health_answers() -> None:
    with double(ttft_ms=20_000.0) as (target, state):  # accepted, no token for 20 s
        result = ask_canary(LocalTransport(), target, deadline_s=1)
        assert state.metrics.requests_running == 1, "the request is in the engine"
    assert result.health == 200 and result.status == 0
    assert "timed out" in result.error
    [finding] = checks.check_canary(UNIT, result).findings
    assert finding.kind == "hung_engine" and finding.subject == "canary"
    assert "/health answers 200" in finding.summary and "1 s" in finding.summary
    assert finding.evidence["deadline_s"] == 1 and finding.evidence["health"] == 200


def test_a_canary_that_errors_is_hung_with_the_status_and_a_bounded_body() -> None:
    with double(stream_fault="http_500") as (target, _):
        result = ask_canary(LocalTransport(), target, deadline_s=5)
    assert (result.health, result.status) == (200, 500)
    [finding] = checks.check_canary(UNIT, result).findings
    assert "HTTP 500" in finding.summary
    assert "injected fault" in finding.evidence["body"]
    assert len(finding.evidence["body"]) <= checks.CANARY_BODY_CHARS


def test_a_server_whose_health_does_not_answer_200_is_not_judged_by_the_canary() -> None:
    with double() as (target, state):
        state.healthy = False
        result = ask_canary(LocalTransport(), target, deadline_s=5)
    assert result.health == 503 and result.status is None, "no canary without /health"
    assert checks.check_canary(UNIT, result).judged is False


@pytest.mark.parametrize("deadline", [0.0, -1.0])
def test_a_canary_needs_a_positive_deadline(deadline: float) -> None:
    with pytest.raises(ValueError):
        ask_canary(LocalTransport(), Target(unit=UNIT, approved_text=""), deadline_s=deadline)


def test_the_canary_result_keeps_only_what_it_needs() -> None:
    result = CanaryResult(health=200, status=0, seconds=10.2, deadline_s=10, error="x" * 10_000)
    [finding] = checks.check_canary(UNIT, result).findings
    assert len(finding.evidence["error"]) <= checks.CANARY_BODY_CHARS
