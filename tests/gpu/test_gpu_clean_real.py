"""`benchmarks/gpu_clean_real.py`: specadmin's GPU clean-up on real CUDA processes.

The `gpu` test runs it on real GPUs (a GPU machine: PyTorch with CUDA,
nvidia-ml-py, nvidia-smi; no Django needed) and is skipped elsewhere. The other runs the
same script against the GPU doubles, so its choreography is tested on every CI run.
Neither needs Django: `python3 -m pytest -m gpu tests/gpu` runs on the GPU machine.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_clean_real.py"


def run_script(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1", NCCL_NVLS_ENABLE="0")
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
    )


def test_the_script_passes_against_the_gpu_doubles() -> None:
    done = run_script(
        "--double",
        "--gpus",
        "2",
        "--gib",
        "1",
        "--grace",
        "0.5",
        "--seed-scale",
        "0.1",
        timeout=120,
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "RESULT: all checks passed" in out
    assert "SIGKILL PID" in out and "GPU 0 is held by PID" in out
    assert "the first-GPU-only check calls the host clean (it misses GPU 1)" in out


def _gpus_available() -> str | None:
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("pynvml") is None:
        return "needs PyTorch and nvidia-ml-py"
    if not shutil.which("nvidia-smi"):
        return "needs nvidia-smi"
    import pynvml  # noqa: PLC0415 (optional: only GPU machines have NVML)

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return f"NVML cannot initialise here: {exc}"
    pynvml.nvmlShutdown()
    return None


@pytest.mark.gpu
def test_real_cuda_leftovers_are_found_killed_and_every_gpu_verified_clean() -> None:
    reason = _gpus_available()
    if reason:
        pytest.skip(reason)
    done = run_script("--gib", "20", "--grace", "3", timeout=540)
    print(done.stdout)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "RESULT: all checks passed" in done.stdout
