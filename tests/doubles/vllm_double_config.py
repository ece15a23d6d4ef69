"""TEST DOUBLE for `vllm serve`: its knobs (config file section "vllm" + VLLM_DOUBLE_* env)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Package-relative: `doubles` in a test host (`python -m doubles.vllm_double`),
# `tests.doubles` in the checkout.
from . import gpu_state
from .vllm_double_schedule import DEFAULT_ACCEPTANCE_RATE, DEFAULT_DRAFT_OVERHEAD

DEFAULT_VERSION = "0.16.0"
# Where the flag catalogs are generated (linting/vllm/catalogs in the checkout).
REPO_CATALOG_DIR = str(Path(__file__).resolve().parents[2] / "linting/vllm/catalogs")
FIXTURE_CATALOG_DIR = str(Path(__file__).resolve().parent / "fixtures")
FAULTS = (
    "leftover_worker",
    "ignore_sigterm",
    "crash_after_start",
    "crash_during_load",  # dies crash_after_s into the load (CUDA OOM), before /health
    "never_healthy",
)
# Per-request stream faults (what a benchmark client must survive), applied from request
# number `stream_fault_after` (0-based count of generation requests) on.
STREAM_FAULTS = ("", "http_500", "malformed_sse", "no_usage", "stall", "disconnect")


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


# --------------------------------------------------------------------------------------
# configuration


@dataclass
class DoubleConfig:
    """Knobs of the double; env VLLM_DOUBLE_<NAME> overrides config-file key <name>."""

    version: str = DEFAULT_VERSION
    catalog_dirs: list[str] = field(default_factory=lambda: [REPO_CATALOG_DIR])
    config_delay_s: float = 0.2  # parse → engine config (spec config validated here)
    load_s: float = 2.0  # EngineCore holds GPU memory, HTTP not up yet
    ttft_ms: float = 50.0
    itl_ms: float = 10.0
    # Speculative decoding, by default the seed's n-gram on reasoning output: few drafts
    # accepted, each draft token costing verification time, so slower than without
    # (vllm_double_schedule: k=5 is 13% slower at 1 stream).
    accepted_per_step: float | None = None  # mean accepted per step; default: rate x N
    acceptance_rate: float = DEFAULT_ACCEPTANCE_RATE  # share of draft tokens accepted
    draft_overhead: float = DEFAULT_DRAFT_OVERHEAD  # step time added per draft token
    faults: list[str] = field(default_factory=list)
    crash_after_s: float = 2.0
    default_max_tokens: int = 16
    tokens_per_s: float = 0.0  # > 0: tokens per second per stream (replaces itl_ms)
    spec_speed_factor: float = 1.0  # speed multiplier when a speculative config is set
    stream_fault: str = ""
    stream_fault_after: int = 0
    stall_s: float = 30.0  # how long a stalled stream stays silent before closing
    control_file: str = ""  # knobs changed while serving (vllm_double_control); "": none

    @classmethod
    def load(cls, gpu: gpu_state.GpuConfig, env: dict[str, str] | None = None) -> DoubleConfig:
        env = dict(os.environ if env is None else env)
        raw = gpu.section("vllm")
        cfg = cls()
        for name, current in vars(cls()).items():
            value: Any = raw.get(name, current)
            env_value = env.get(f"VLLM_DOUBLE_{name.upper()}")
            if env_value is not None:
                value = env_value
            setattr(cfg, name, _coerce(name, value, current))
        unknown = [f for f in cfg.faults if f not in FAULTS]
        if unknown:
            raise ValueError(f"unknown vllm double faults {unknown}; known: {FAULTS}")
        if cfg.stream_fault not in STREAM_FAULTS:
            raise ValueError(
                f"unknown vllm double stream_fault {cfg.stream_fault!r}; known: {STREAM_FAULTS}"
            )
        return cfg


def _coerce(name: str, value: Any, default: Any) -> Any:
    if name in ("faults", "catalog_dirs"):
        if isinstance(value, str):
            return [v.strip() for v in value.replace(":", ",").split(",") if v.strip()]
        return list(value)
    if name == "accepted_per_step":
        return None if value in (None, "", "none") else float(value)
    if isinstance(default, float):
        return float(value)
    if isinstance(default, int):
        return int(value)
    return str(value)
