"""TEST DOUBLE: shared "GPU memory" bookkeeping for the nvidia-smi and vLLM doubles.

A registration is a file `<state_dir>/<gpu index>/<pid>` holding MiB. It counts only while
that PID is alive (read from /proc), so a killed process frees its memory exactly like a real
CUDA context, while a process that escaped `systemctl stop` keeps holding it.
Stdlib only: it also runs inside minimal test hosts.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_CONFIG_PATH = "/etc/gpu-double/config.json"
DEFAULT_STATE_DIR = "/run/gpu-double"

H200_NAME = "NVIDIA H200"
H200_TOTAL_MIB = 143771  # `nvidia-smi --query-gpu=memory.total` on an H200 (verified)


@dataclass(frozen=True)
class GpuConfig:
    """What the fake host has: GPU count/model and where registrations live."""

    gpu_count: int = 8
    name: str = H200_NAME
    memory_total_mib: int = H200_TOTAL_MIB
    idle_used_mib: int = 0
    uuid_seed: str = "specadmin-gpu-double"
    driver_version: str = "570.133.20"
    state_dir: str = DEFAULT_STATE_DIR
    raw: dict[str, Any] | None = None

    def uuid(self, index: int) -> str:
        """Stable per host and index, formatted like real GPU UUIDs (GPU-xxxxxxxx-…)."""
        return "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.uuid_seed}/{index}"))

    def section(self, name: str) -> dict[str, Any]:
        """A sub-dictionary of the config file (e.g. "vllm"), empty when absent."""
        value = (self.raw or {}).get(name) or {}
        return dict(value) if isinstance(value, dict) else {}


def load_config(path: str | None = None) -> GpuConfig:
    """Read GPU_DOUBLE_CONFIG (or /etc/gpu-double/config.json); defaults when missing."""
    path = path or os.environ.get("GPU_DOUBLE_CONFIG", DEFAULT_CONFIG_PATH)
    try:
        with open(path) as f:
            raw: dict[str, Any] = json.load(f)
    except FileNotFoundError:
        raw = {}
    state_dir = os.environ.get("GPU_DOUBLE_STATE_DIR") or raw.get("state_dir", DEFAULT_STATE_DIR)
    return GpuConfig(
        gpu_count=int(raw.get("gpu_count", 8)),
        name=str(raw.get("name", H200_NAME)),
        memory_total_mib=int(raw.get("memory_total_mib", H200_TOTAL_MIB)),
        idle_used_mib=int(raw.get("idle_used_mib", 0)),
        uuid_seed=str(raw.get("uuid_seed", "specadmin-gpu-double")),
        driver_version=str(raw.get("driver_version", "570.133.20")),
        state_dir=str(state_dir),
        raw=raw,
    )


def pid_alive(pid: int) -> bool:
    """Alive and not a zombie: a zombie's CUDA memory is already released."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def process_name(pid: int) -> str:
    """argv[0] as nvidia-smi shows it (a setproctitle rewrite shows, e.g. VLLM::EngineCore)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            first = f.read().split(b"\0", 1)[0].decode(errors="replace").strip()
    except OSError:
        first = ""
    if first:
        return first
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "[Not Found]"


@dataclass(frozen=True)
class Registration:
    gpu: int
    pid: int
    mib: int


def register(config: GpuConfig, gpu: int, pid: int, mib: int) -> None:
    """Record that pid holds mib on gpu (atomic rename: readers never see half a file)."""
    gpu_dir = Path(config.state_dir) / str(gpu)
    if not gpu_dir.is_dir():
        gpu_dir.mkdir(parents=True, exist_ok=True)
        # Any user's process holds GPU memory on a real GPU (a unit with User=vllm): the
        # directory is shared like /dev/shm (sticky: each removes only its own files).
        with contextlib.suppress(PermissionError):
            gpu_dir.chmod(0o1777)
    tmp = gpu_dir / f".{pid}.tmp"
    tmp.write_text(f"{int(mib)}\n")
    os.replace(tmp, gpu_dir / str(pid))


def unregister(config: GpuConfig, pid: int) -> None:
    for gpu in range(config.gpu_count):
        (Path(config.state_dir) / str(gpu) / str(pid)).unlink(missing_ok=True)


def live_registrations(config: GpuConfig) -> list[Registration]:
    """Registrations whose PID is alive, sorted by GPU then PID."""
    regs: list[Registration] = []
    root = Path(config.state_dir)
    for gpu in range(config.gpu_count):
        gpu_dir = root / str(gpu)
        if not gpu_dir.is_dir():
            continue
        for entry in gpu_dir.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                mib = int(entry.read_text().strip() or 0)
            except (OSError, ValueError):
                continue
            pid = int(entry.name)
            if pid_alive(pid):
                regs.append(Registration(gpu=gpu, pid=pid, mib=mib))
    return sorted(regs, key=lambda r: (r.gpu, r.pid))


def used_mib(config: GpuConfig, regs: list[Registration] | None = None) -> dict[int, int]:
    """memory.used per GPU index."""
    regs = live_registrations(config) if regs is None else regs
    used = {gpu: config.idle_used_mib for gpu in range(config.gpu_count)}
    for reg in regs:
        used[reg.gpu] = used.get(reg.gpu, 0) + reg.mib
    return {gpu: min(mib, config.memory_total_mib) for gpu, mib in used.items()}
