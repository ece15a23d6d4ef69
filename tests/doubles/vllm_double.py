"""TEST DOUBLE for `vllm serve`: argument checks, GPU memory, OpenAI API and metrics.

What it reproduces, and why (each is something specadmin must observe on a real host):
- argument parsing from the generated flag catalog of the targeted vLLM version (argparse
  errors exit 2; `--speculative-config` is a JSON-typed argparse option, and its *content* is
  validated later, at engine-config time, exit 1 with the version's error text);
- an EngineCore child process that shows as `VLLM::EngineCore` in `ps`/nvidia-smi and holds
  "GPU memory" (gpu_state registrations) on the GPUs picked by CUDA_VISIBLE_DEVICES and
  --tensor-parallel-size; start-up fails like vLLM when another process holds that memory;
- a configurable load time, then an OpenAI-compatible HTTP API whose streamed tokens follow an
  exactly known schedule, with spec-decode counters in /metrics that match the tokens sent;
- fault modes: leftover_worker, ignore_sigterm, crash_after_start, crash_during_load,
  never_healthy.

Configuration: the "vllm" section of /etc/gpu-double/config.json, overridden by environment
variables VLLM_DOUBLE_* (see DoubleConfig). Stdlib only. Never imported by product code.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

# The double is split by subject (vllm_double_*.py); this module is the `vllm` entry point
# and keeps the names its users import (`vllm_double.plan_chunks`, ...).
# Package-relative: `doubles` in a test host (`python -m doubles.vllm_double`),
# `tests.doubles` in the checkout.
from . import gpu_state, vllm_double_bench
from .vllm_double_args import (
    SERVE_USAGE,
    TOP_USAGE,
    CatalogMissing,
    build_parser,
    find_catalog,
    human_readable_int,
    load_catalog,
    normalize_args,
    parse_serve_args,
)
from .vllm_double_config import (
    DEFAULT_VERSION,
    FAULTS,
    FIXTURE_CATALOG_DIR,
    REPO_CATALOG_DIR,
    DoubleConfig,
    version_tuple,
)
from .vllm_double_engine import (
    ENGINE_CORE_TITLE,
    EngineCore,
    escape_unit_cgroup,
    set_process_title,
    start_engine_core,
)
from .vllm_double_engine_config import (
    EngineConfigError,
    pick_gpus,
    validate_memory_utilization,
    validate_speculative_config,
)
from .vllm_double_http import (
    Handler,
    ServerState,
    SpecMetrics,
    iter_sse,
    make_server,
    render_metrics,
)
from .vllm_double_log import (
    fail,
    log,
)
from .vllm_double_schedule import (
    Chunk,
    count_prompt_tokens,
    plan_chunks,
    token_text,
)

__all__ = [
    "DEFAULT_VERSION",
    "ENGINE_CORE_TITLE",
    "FAULTS",
    "FIXTURE_CATALOG_DIR",
    "REPO_CATALOG_DIR",
    "SERVE_USAGE",
    "TOP_USAGE",
    "CatalogMissing",
    "Chunk",
    "DoubleConfig",
    "EngineConfigError",
    "EngineCore",
    "Handler",
    "ServerState",
    "SpecMetrics",
    "build_parser",
    "count_prompt_tokens",
    "escape_unit_cgroup",
    "fail",
    "find_catalog",
    "human_readable_int",
    "iter_sse",
    "load_catalog",
    "log",
    "make_server",
    "normalize_args",
    "parse_serve_args",
    "pick_gpus",
    "plan_chunks",
    "render_metrics",
    "set_process_title",
    "start_engine_core",
    "token_text",
    "validate_memory_utilization",
    "validate_speculative_config",
    "version_tuple",
]


# --------------------------------------------------------------------------------------
# main


def _ns(ns: argparse.Namespace, name: str, default: Any = None) -> Any:
    value = getattr(ns, name, None)
    return default if value is None else value


def serve(argv: Sequence[str], gpu: gpu_state.GpuConfig, cfg: DoubleConfig) -> int:
    try:
        catalog = load_catalog(cfg.version, cfg.catalog_dirs)
    except CatalogMissing as exc:
        sys.stderr.write(f"vllm double: {exc}\n")
        return 3
    try:
        ns = parse_serve_args(catalog, cfg.version, argv)
    except EngineConfigError as exc:
        return fail(str(exc))
    if ns.help:
        sys.stdout.write(f"usage: {SERVE_USAGE}\n")
        return 0
    model = ns.model_tag or _ns(ns, "model", "Qwen/Qwen3-0.6B")
    stop = threading.Event()
    faults = set(cfg.faults)
    _stop_on_signals(stop, faults)
    log("INFO", "api_server.py:1885", f"vLLM API server version {cfg.version}")
    log("INFO", "utils.py:328", f"non-default args: {argv}")
    if stop.wait(cfg.config_delay_s):
        return 0
    try:
        spec, engine, gpus = _start_engine(ns, model, catalog, gpu, cfg, faults)
    except EngineConfigError as exc:
        return fail(str(exc))
    log("INFO", "gpu_model_runner.py:2000", f"Loading model {model} on GPUs {gpus}")
    if "crash_during_load" in faults and cfg.crash_after_s < cfg.load_s:
        return _crash_during_load(engine, stop, cfg, faults)
    if stop.wait(cfg.load_s):
        return _shutdown(engine, faults)
    state = _server_state(ns, model, spec, cfg, faults)
    host = _ns(ns, "host", "127.0.0.1")  # real vLLM binds all interfaces; tests stay on lo
    port = int(_ns(ns, "port", 8000))
    try:
        server = make_server(host, port, state)
    except OSError as exc:
        _shutdown(engine, faults)
        return fail(f"OSError: [Errno {exc.errno}] {exc.strerror}: ('{host}', {port})")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    log("INFO", "launcher.py:34", f"Starting vLLM API server 0 on http://{host}:{port}")
    log("INFO", "on.py:62", "Application startup complete.")
    return _serve_until_stopped(server, engine, stop, cfg, faults)


def _stop_on_signals(stop: threading.Event, faults: set[str]) -> None:
    """SIGTERM and SIGINT stop the server (unless the fault `ignore_sigterm` is on)."""

    def on_sigterm(signum: int, frame: Any) -> None:
        if "ignore_sigterm" in faults:
            log("WARNING", "api_server.py:1", "fault ignore_sigterm: ignoring SIGTERM")
            return
        stop.set()

    signal.signal(signal.SIGTERM, on_sigterm)
    signal.signal(signal.SIGINT, on_sigterm)


def _start_engine(
    ns: argparse.Namespace,
    model: str,
    catalog: Any,
    gpu: gpu_state.GpuConfig,
    cfg: DoubleConfig,
    faults: set[str],
) -> tuple[dict[str, Any] | None, EngineCore, list[int]]:
    """The engine configuration vLLM checks at engine start, then the EngineCore process
    on its GPUs; raises EngineConfigError as vLLM would fail."""
    spec = validate_speculative_config(_ns(ns, "speculative_config"), catalog, cfg.version)
    util = float(_ns(ns, "gpu_memory_utilization", 0.9))
    validate_memory_utilization(util, cfg.version)
    world = int(_ns(ns, "tensor_parallel_size", 1)) * int(_ns(ns, "pipeline_parallel_size", 1))
    gpus = pick_gpus(os.environ.get("CUDA_VISIBLE_DEVICES"), world, gpu)
    mib = int(util * gpu.memory_total_mib)
    log(
        "INFO",
        "core.py:73",
        f"Initializing a V1 LLM engine (v{cfg.version}) with config: "
        f"model={model!r}, speculative_config={spec}, tensor_parallel_size={world}",
    )
    return spec, start_engine_core(gpus, mib, gpu, faults), gpus


def _crash_during_load(
    engine: EngineCore, stop: threading.Event, cfg: DoubleConfig, faults: set[str]
) -> int:
    """ "A crash at minute 20 of the load": the engine dies before the server is up."""
    if stop.wait(cfg.crash_after_s):
        return _shutdown(engine, faults)
    log("ERROR", "core.py:700", "fault crash_during_load: EngineCore failed while loading")
    _kill_engine(engine)
    return fail(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 "
        "has a total capacity of 140.40 GiB of which 1.12 GiB is free."
    )


def _server_state(
    ns: argparse.Namespace,
    model: str,
    spec: dict[str, Any] | None,
    cfg: DoubleConfig,
    faults: set[str],
) -> ServerState:
    served = _ns(ns, "served_model_name") or [model]
    served = [served] if isinstance(served, str) else list(served)
    return ServerState(
        model=model,
        served_names=served,
        max_model_len=_max_model_len(_ns(ns, "max_model_len", 4096)),
        api_keys=_as_list(_ns(ns, "api_key")),
        cfg=cfg,
        num_spec_tokens=int((spec or {}).get("num_speculative_tokens") or 0),
        spec_enabled=spec is not None,
        healthy="never_healthy" not in faults,
    )


def _serve_until_stopped(
    server: Any, engine: EngineCore, stop: threading.Event, cfg: DoubleConfig, faults: set[str]
) -> int:
    """Serve until a stop signal, the EngineCore's death or the fault `crash_after_start`."""
    deadline = time.monotonic() + cfg.crash_after_s if "crash_after_start" in faults else None
    while not stop.wait(0.2):
        if not gpu_state.pid_alive(engine.pid) and "leftover_worker" not in faults:
            _reap(engine.pid)
            log(
                "ERROR",
                "core_client.py:564",
                "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",
            )
            server.shutdown()
            return fail(
                "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an "
                "issue. See stack trace (above) for the root cause."
            )
        if deadline is not None and time.monotonic() >= deadline:
            log("ERROR", "core.py:700", "fault crash_after_start: EngineCore failed")
            _kill_engine(engine)
            return fail("RuntimeError: CUDA error: an illegal memory access was encountered")
    log("INFO", "launcher.py:80", "Shutting down FastAPI HTTP server.")
    server.shutdown()
    return _shutdown(engine, faults)


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _max_model_len(value: Any) -> int:
    """`auto`/-1 mean "derived from the model" in vLLM; the double says 4096."""
    return value if isinstance(value, int) and value > 0 else 4096


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _kill_engine(engine: EngineCore) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(engine.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(engine.pid, 0)


def _shutdown(engine: EngineCore, faults: set[str]) -> int:
    if "leftover_worker" not in faults:
        _kill_engine(engine)
    return 0


def _children_gpu_config() -> gpu_state.GpuConfig:
    return gpu_state.load_config()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    gpu = _children_gpu_config()
    try:
        cfg = DoubleConfig.load(gpu)
    except ValueError as exc:
        sys.stderr.write(f"vllm double: {exc}\n")
        return 3
    if args[:1] in (["-v"], ["--version"]):
        sys.stdout.write(cfg.version + "\n")
        return 0
    if args[:1] == ["bench"]:
        return vllm_double_bench.main(args[1:])
    if not args or args[0] != "serve":
        choice = args[0] if args else ""
        sys.stderr.write(
            f"{TOP_USAGE}\nvllm: error: argument subparser: invalid choice: '{choice}' (choose "
            "from 'chat', 'complete', 'serve', 'bench', 'collect-env', 'run-batch')\n"
        )
        return 2
    try:
        return serve(args[1:], gpu, cfg)
    except SystemExit as exc:
        return int(exc.code or 0)


if __name__ == "__main__":
    sys.exit(main())
