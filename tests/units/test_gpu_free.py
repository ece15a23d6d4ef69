"""One meaning of "the GPUs are free" (hostops.gpu_free): the unit's own wait before vLLM
starts and the deploy job's GPU-clean step agree at the threshold, the default is issue
10's 1,000 MiB, and a stored version keeps the threshold it was saved with."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deploys.jobs.policy import PipelinePolicy
from hostops.channel.base import (
    NVIDIA_SMI_APP_QUERY,
    NVIDIA_SMI_GPU_QUERY,
    GpuInfo,
    parse_nvidia_smi,
)
from hostops.gpu_clean import CleanPolicy, dirty_gpus
from hostops.gpu_free import DEFAULT_THRESHOLD_MIB
from tests.doubles import gpu_state
from tests.units.factories import baseline
from units.models import ServiceProfile
from units.rendering import gpu_wait_script, render_unit

ROOT = Path(__file__).resolve().parents[2]


def _nvidia_smi(tmp_path: Path, used_mib: int) -> dict[str, str]:
    """An environment whose `nvidia-smi` is the repository's double, every GPU showing
    `used_mib` used and no process."""
    config = tmp_path / "gpu.json"
    config.write_text(json.dumps({"gpu_count": 2, "idle_used_mib": used_mib}))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    wrapper = bin_dir / "nvidia-smi"
    wrapper.write_text(
        f'#!/bin/sh\ncd {ROOT} && exec {sys.executable} -m tests.doubles.nvidia_smi_double "$@"\n'
    )
    wrapper.chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "GPU_DOUBLE_CONFIG": str(config),
        "GPU_DOUBLE_STATE_DIR": str(tmp_path / "state"),
    }


def _gpus(env: dict[str, str]) -> list[GpuInfo]:
    """What the GPU-clean step reads over SSH: the same two nvidia-smi queries."""

    def query(*args: str) -> str:
        done = subprocess.run(["nvidia-smi", *args], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    fmt = "--format=csv,noheader,nounits"
    return parse_nvidia_smi(
        query(f"--query-gpu={NVIDIA_SMI_GPU_QUERY}", fmt),
        query(f"--query-compute-apps={NVIDIA_SMI_APP_QUERY}", fmt),
    )


@pytest.mark.parametrize("used", [0, 999, 1000, 1001, 4000])
def test_the_units_wait_and_the_gpu_clean_step_agree_at_the_threshold(
    tmp_path: Path, used: int
) -> None:
    env = _nvidia_smi(tmp_path, used)
    script = gpu_wait_script(baseline(gpu_free_wait_sec=1, gpu_free_threshold_mib=1000))
    assert script is not None
    wait = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
    step_clean = dirty_gpus(_gpus(env), CleanPolicy(threshold_mib=1000).threshold_mib) == []
    assert (wait.returncode == 0) is step_clean, (used, wait.stderr)
    assert step_clean is (used <= 1000)


def test_a_new_profile_frees_gpus_below_1000_mib_as_issue_10_says() -> None:
    assert DEFAULT_THRESHOLD_MIB == 1000
    assert ServiceProfile().gpu_free_threshold_mib == 1000
    assert CleanPolicy().threshold_mib == 1000
    assert PipelinePolicy.from_profile_data({"timeout_stop_sec": 120}).clean.threshold_mib == 1000
    assert "-le 1000 ]" in render_unit(baseline())


def test_a_stored_version_keeps_the_threshold_it_was_saved_with() -> None:
    """Versions saved while the default was 1,024 MiB are deployed with 1,024 MiB: the
    unit text (approved by its hash) and the job's GPU-clean step both keep it."""
    old = baseline(gpu_free_threshold_mib=1024)
    assert PipelinePolicy.from_profile_data(old).clean.threshold_mib == 1024
    assert "-le 1024 ]" in render_unit(old)


@pytest.mark.parametrize(
    ("devices", "free"), [("1", True), ("01", True), ("0", False), ("", False)]
)
def test_the_units_wait_looks_only_at_its_own_gpus(
    tmp_path: Path, devices: str, free: bool
) -> None:
    """Another process holds 5,000 MiB on GPU 0: the wait of a unit on GPU 1 passes at
    once (`nvidia-smi -i 1`), one on GPU 0, or on every GPU (no list), times out."""
    env = _nvidia_smi(tmp_path, 0)
    config = gpu_state.GpuConfig(gpu_count=2, state_dir=env["GPU_DOUBLE_STATE_DIR"])
    gpu_state.register(config, 0, os.getpid(), 5000)
    data = baseline(gpu_devices=devices, tensor_parallel_size=1, gpu_free_wait_sec=1)
    script = gpu_wait_script(data)
    assert script is not None
    wait = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
    assert (wait.returncode == 0) is free, wait.stderr
    if not free:
        which = "GPU 0" if devices else "GPUs"
        assert f"{which} not free after 1 s" in wait.stderr
