"""The benchmark against the test-only transformers server.

`gpu`-marked tests need CUDA (run them on a GPU machine:
`python -m pytest -m gpu tests/bench/test_real_gpu.py`). The CPU test runs the same code
with the tiny model wherever torch and transformers are installed (not in the project's
.venv: see docs/dependencies.md), and is skipped elsewhere.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import bench_real_gpu
from servebench import RunSettings, run_sync

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tests.gpu_test_server.model")

ROOT = Path(__file__).resolve().parents[2]
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU here")


def test_the_test_server_streams_and_counts_prompt_lookup_drafts_on_cpu() -> None:
    proc, url = bench_real_gpu.start_server(device="cpu", size="tiny", prompt_lookup=3)
    try:
        result = run_sync(
            RunSettings(
                url=url,
                prompts="summary",
                max_tokens=12,
                concurrency=[2],
                num_requests=4,
                warmup=0,
                endpoint="chat",
            )
        )
    finally:
        bench_real_gpu.stop_server(proc)
    level = result.levels[0]
    assert not result.incomplete, level.errors
    assert level.total_output_tokens == 4 * 12
    spec = level.spec_decode
    assert spec is not None and spec.num_drafts > 0
    assert spec.acceptance_length == pytest.approx(1 + spec.accepted_tokens / spec.num_drafts)


def test_the_script_runs_baseline_and_variant_and_writes_the_gate_verdict(tmp_path: Path) -> None:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    size = "gpu" if device == "cuda" else "tiny"
    out = tmp_path / "r.json"
    code = bench_real_gpu.main(
        [
            "--device",
            device,
            "--size",
            size,
            "--requests",
            "3",
            "--max-tokens",
            "16",
            "--repeats",
            "2",
            "--noisy-budget",
            "0",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    report = json.loads(out.read_text())
    assert set(report["results"]) == {"baseline", "prompt-lookup"}
    assert report["gate"]["verdict"] in ("pass", "regressed", "noisy")
    variant = report["results"]["prompt-lookup"]["levels"]
    assert len(variant) == 4  # 2 concurrency levels × 2 repeats
    assert all(lv["spec_decode"] for lv in variant)
    assert not any(lv["spec_decode"] for lv in report["results"]["baseline"]["levels"])


@pytest.mark.gpu
@needs_cuda
def test_decoding_with_the_gpu_size_model_is_gpu_bound() -> None:
    """Batch-1 decoding as the server does it (`generate`): the GPU's kernels are busy for
    most of each step's wall time (kernel time from torch.profiler; wall time from runs
    without it), so the CPU's launch overhead is not what limits the speed. Measured in a
    child process, so this pytest process never holds GPU memory (tests/gpu counts every
    compute process)."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.gpu_test_server.gpu_bound"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    step = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"decode step: wall {step['wall_ms']:.2f} ms, GPU kernels busy {step['busy_ms']:.2f} ms")
    assert step["busy_ms"] > 0.5 * step["wall_ms"]


@pytest.mark.gpu
@needs_cuda
def test_the_gpu_server_serves_on_the_gpu() -> None:
    proc, url = bench_real_gpu.start_server(device="cuda", size="gpu", prompt_lookup=0)
    try:
        result = run_sync(RunSettings(url=url, max_tokens=32, num_requests=2, warmup=1))
    finally:
        bench_real_gpu.stop_server(proc)
    assert not result.incomplete
    assert result.levels[0].tpot_ms.median > 0
