"""The seed deployment's case on a real systemd test host running the vLLM double:
baseline at 74 tok/s per stream, the n-gram variant 15% slower → the gate fires.

The units run under systemd on the test host (tests/testhost); the double's speed comes
from its environment (`VLLM_DOUBLE_TOKENS_PER_S=74`, and with a speculative config
`VLLM_DOUBLE_SPEC_SPEED_FACTOR=0.85` with nothing accepted and no step overhead: exactly
15% slower; the seed measured n-gram 9–26% slower).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest

from audit.models import AuditEvent
from deploys.jobs import benchmark as hook
from deploys.jobs.benchmark import BenchmarkJob
from deploys.jobs.context import JobContext
from deploys.jobs.recorder import Recorder
from deploys.jobs.steps import Outcome
from deploys.models import DeployRequest
from perf.models import Baseline, BenchPolicy, BenchRun
from perf.services import BASELINE_ACCEPTED
from tests.doubles.vllm_double_schedule import plan_chunks, step_interval_s, true_timings
from tests.perf.conftest import service_at
from tests.testhost.host import TestHost

pytestmark = [pytest.mark.testhost, pytest.mark.django_db(transaction=True)]
PORT = 18731
NGRAM = json.dumps({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3})


def _unit(host: TestHost, extra: str = "") -> None:
    host.write_file(
        "/etc/systemd/system/vllm-seed.service",
        "[Unit]\nDescription=vLLM double (seed case)\n\n[Service]\nType=exec\n"
        "Environment=CUDA_VISIBLE_DEVICES=0 VLLM_DOUBLE_LOAD_S=0.5\n"
        "Environment=VLLM_DOUBLE_TOKENS_PER_S=74 VLLM_DOUBLE_SPEC_SPEED_FACTOR=0.85\n"
        # nothing accepted and no step overhead: the 15% comes from the factor alone
        "Environment=VLLM_DOUBLE_ACCEPTED_PER_STEP=0 VLLM_DOUBLE_DRAFT_OVERHEAD=0\n"
        "Environment=VLLM_DOUBLE_TTFT_MS=60\n"
        f"ExecStart=/usr/local/bin/vllm serve Qwen/Qwen3-8B --host 127.0.0.1 --port {PORT} "
        f"{extra}\nTimeoutStopSec=5\n",
    )
    host.ssh(["systemctl", "daemon-reload"], check=True)
    host.ssh(["systemctl", "restart", "vllm-seed.service"], check=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        res = host.ssh(["curl", "-sf", "-o", "/dev/null", f"http://127.0.0.1:{PORT}/health"])
        if res.returncode == 0:
            return
        time.sleep(0.2)
    raise AssertionError(host.ssh(["journalctl", "-u", "vllm-seed", "-n", "30"]).stdout)


def test_the_ngram_variant_15_percent_slower_than_the_74_tok_s_baseline_regresses(
    testhost: TestHost,
    make_request: Callable[..., DeployRequest],
    small_policy: BenchPolicy,
) -> None:
    small_policy.client_on_host = False  # measured from here: the step opens no connection
    small_policy.save()

    def ctx() -> BenchmarkJob:
        request = make_request()
        request.host.address = "127.0.0.1"  # the test host shares this machine's loopback
        request.host.save(update_fields=["address"])
        context = JobContext.open(request, lambda h: None)
        return BenchmarkJob(context, Recorder(), service_at(f"http://127.0.0.1:{PORT}"))

    try:
        _unit(testhost)
        first = hook.benchmark(ctx())
        assert first.outcome == Outcome.OK, first.reason
        assert first.data["tpot_p50_ms"] == pytest.approx(1000 / 74, rel=0.02)
        _unit(testhost, f"--speculative-config '{NGRAM}'")
        second = hook.benchmark(ctx())
    finally:
        testhost.ssh(["systemctl", "stop", "vllm-seed.service"])
    assert second.outcome == Outcome.REGRESSED, second.reason
    assert second.rollback is True
    assert "Output tokens/s at 1 stream down 1" in second.reason
    run = BenchRun.objects.get(pk=second.data["bench_run"])
    # no draft token accepted: one token per step, 1 / (74 × 0.85) s apart
    itl = step_interval_s(
        itl_ms=0,
        tokens_per_s=74,
        num_speculative_tokens=3,
        spec_speed_factor=0.85,
        draft_overhead=0,
    )
    chunks = plan_chunks(32, ttft_s=0.06, itl_s=itl, num_speculative_tokens=3, accepted_per_step=0)
    assert run.tpot_p50_ms == pytest.approx(true_timings(chunks).tpot_s * 1000, rel=0.02)
    accepted = sum(c.accepted for c in chunks) / sum(c.draft_tokens for c in chunks)
    assert run.acceptance_rate == pytest.approx(accepted * 100)
    assert Baseline.objects.get().run_id == first.data["bench_run"]
    assert AuditEvent.objects.filter(kind=BASELINE_ACCEPTED).count() == 1
