"""`manage.py bench`: URL only, or stored for a profile on a host and gated."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from perf.models import Baseline, BenchRun
from perf.services import accept_baseline
from perf.vllm_bench import vllm_bench_argv
from servebench.runner import RunSettings
from tests.bench.conftest import StartDouble
from units.models import ServiceProfile

pytestmark = pytest.mark.django_db
QUICK = ["--requests", "3", "--max-tokens", "16", "--quiet", "--warmup", "0"]


def _bench(*args: str) -> str:
    out, err = StringIO(), StringIO()
    call_command("bench", *args, stdout=out, stderr=err)
    return out.getvalue()


def test_a_url_is_measured_and_printed_without_storing(vllm_double: StartDouble) -> None:
    out = _bench(vllm_double("--ttft-ms", "20", "--tokens-per-s", "300"), *QUICK)
    assert out.startswith("servebench · model m")
    assert "TPOT p50" in out
    assert not BenchRun.objects.exists()


def test_a_profile_on_a_host_is_stored_and_compared_with_its_baseline(
    vllm_double: StartDouble, profile: ServiceProfile, host: object
) -> None:
    fast = vllm_double("--ttft-ms", "20", "--tokens-per-s", "300")
    first = json.loads(_bench(fast, "--profile", profile.name, "--host", "gpu-a", *QUICK, "--json"))
    run = BenchRun.objects.get(pk=first["bench_run"])
    assert run.profile == profile and run.host.name == "gpu-a"
    assert "gate" not in first
    accept_baseline(run=run, actor=None, reason="test")
    slow = vllm_double("--ttft-ms", "20", "--tokens-per-s", "200")
    out = _bench(slow, "--profile", profile.name, "--host", "gpu-a", "--quiet", "--repeats", "1")
    assert "gate: REGRESSED (threshold 5%)" in out
    assert "stored as run #" in out
    second = BenchRun.objects.exclude(pk=run.pk).get()
    assert second.verdict == BenchRun.Verdict.REGRESSED
    assert second.settings_key == run.settings_key  # measured with the baseline's settings
    assert Baseline.objects.get().run == run


def test_bad_targets_are_one_line_errors(profile: ServiceProfile, host: object) -> None:
    with pytest.raises(CommandError, match="no profile named 'nope'"):
        _bench("--profile", "nope", "--host", "gpu-a")
    with pytest.raises(CommandError, match="--profile and --host go together"):
        _bench("--profile", profile.name)
    with pytest.raises(CommandError, match="was never deployed to gpu-a successfully"):
        _bench("--profile", profile.name, "--host", "gpu-a")
    with pytest.raises(CommandError, match="cannot connect to the server"):
        _bench("http://127.0.0.1:9", *QUICK)


def test_vllm_bench_serve_is_asked_for_the_same_workload() -> None:
    settings = RunSettings(
        url="http://127.0.0.1:8000", endpoint="chat", max_tokens=64, num_requests=8, seed=3
    )
    argv = vllm_bench_argv("/opt/vllm/bin/vllm", settings, 8, "/tmp/d/p.jsonl", "/tmp/d")
    assert argv[:5] == ["timeout", "3600", "/opt/vllm/bin/vllm", "bench", "serve"]
    text = " ".join(argv)
    for part in (
        "--backend openai-chat",
        "--endpoint /v1/chat/completions",
        "--dataset-name custom",
        "--custom-output-len 64",
        "--num-prompts 8",
        "--seed 3",
        "--max-concurrency 8",
        "--ignore-eos",
        "--save-result",
        "--result-filename c8.json",
    ):
        assert part in text
