"""TEST DOUBLE for `vllm serve`: the EngineCore child (process title, cgroup escape, GPU memory)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

# Package-relative: `doubles` in a test host (`python -m doubles.vllm_double`),
# `tests.doubles` in the checkout.
from . import gpu_state
from .vllm_double_engine_config import EngineConfigError

ENGINE_CORE_TITLE = "VLLM::EngineCore"

# --------------------------------------------------------------------------------------
# EngineCore child: process title, cgroup escape, GPU registrations


def set_process_title(title: str) -> None:
    """Like setproctitle: comm (15 bytes, what prctl(PR_SET_NAME) sets) and the argv memory.

    No ctypes: minimal hosts may lack libffi. /proc/self/comm is writable by the process.
    """
    with contextlib.suppress(OSError), open("/proc/self/comm", "w") as comm:
        comm.write(title[:15])
    with open("/proc/self/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    arg_start, arg_end = int(rest[45]), int(rest[46])
    size = arg_end - arg_start
    data = title.encode()[: size - 1].ljust(size, b"\0")
    with contextlib.suppress(OSError), open("/proc/self/mem", "r+b", buffering=0) as mem:
        mem.seek(arg_start)
        mem.write(data)


def escape_unit_cgroup(pid: int) -> list[str]:
    """Move pid next to PID 1 (init.scope) in every cgroup hierarchy, out of the unit.

    A worker outside the unit's cgroup survives `systemctl stop` whatever KillMode says:
    this reproduces "GPU still busy after stop" deterministically.
    """
    mounts = _cgroup_mounts()
    moved: list[str] = []
    with open("/proc/1/cgroup") as f:
        for line in f:
            target = _init_cgroup_procs(line, mounts)
            if target is None:
                continue
            try:
                target.write_text(f"{pid}\n")
                moved.append(str(target))
            except OSError:
                continue
    return moved


def _cgroup_mounts() -> dict[str, str]:
    """Where each cgroup hierarchy is mounted: "0:" for cgroup2, else a v1 controller
    (or `name=`) that identifies its hierarchy."""
    mounts: dict[str, str] = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            sep = parts.index("-")
            fstype, options = parts[sep + 1], parts[sep + 3]
            if fstype == "cgroup2":
                mounts["0:"] = parts[4]
            elif fstype == "cgroup":
                for opt in options.split(","):
                    if opt.startswith("name=") or opt in ("cpu", "memory", "pids", "cpuset"):
                        mounts.setdefault(opt, parts[4])
    return mounts


def _init_cgroup_procs(line: str, mounts: dict[str, str]) -> Path | None:
    """The `cgroup.procs` of PID 1's cgroup for one line of /proc/1/cgroup, or None when
    that hierarchy is not mounted here."""
    hid, controllers, path = line.rstrip("\n").split(":", 2)
    key = "0:" if hid == "0" else None
    if key is None:
        key = next((c for c in controllers.split(",") if c in mounts), None)
    if key is None or key not in mounts:
        return None
    return Path(mounts[key]) / path.lstrip("/") / "cgroup.procs"


def _engine_core(
    gpus: list[int],
    mib: int,
    gpu: gpu_state.GpuConfig,
    leftover: bool,
    ignore_sigterm: bool,
    report_fd: int,
) -> None:
    """Body of the forked EngineCore; never returns."""
    code = 0
    try:
        set_process_title(ENGINE_CORE_TITLE)
        if leftover:
            os.setsid()
            escape_unit_cgroup(os.getpid())
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
        else:
            on_term = signal.SIG_IGN if ignore_sigterm else (lambda *_: os._exit(0))
            signal.signal(signal.SIGTERM, on_term)
        used = gpu_state.used_mib(gpu)
        for i in gpus:
            free = gpu.memory_total_mib - used[i]
            if free < mib:
                gib = 1024
                msg = (
                    f"ValueError: Free memory on device cuda:{i} "
                    f"({free / gib:.2f}/{gpu.memory_total_mib / gib:.2f} GiB) on startup is less "
                    f"than desired GPU memory utilization ({mib / gpu.memory_total_mib:.2f}, "
                    f"{mib / gib:.2f} GiB). Decrease GPU memory utilization or reduce GPU "
                    "memory used by other processes."
                )
                os.write(report_fd, (msg + "\n").encode())
                os._exit(1)
        for i in gpus:
            gpu_state.register(gpu, i, os.getpid(), mib)
        os.write(report_fd, b"ready\n")
        os.close(report_fd)
        parent = os.getppid()
        while True:
            # Dies with its API server like vLLM's EngineCore (a poll instead of PDEATHSIG).
            if not leftover and os.getppid() != parent:
                os._exit(0)
            time.sleep(0.2)
    except BaseException:  # never fall back into the parent's code path
        traceback.print_exc()
        code = 1
    os._exit(code)


@dataclass
class EngineCore:
    pid: int
    gpus: list[int]


def start_engine_core(
    gpus: list[int], mib: int, gpu: gpu_state.GpuConfig, faults: set[str]
) -> EngineCore:
    """Fork the child (before any thread exists) and wait until it holds its memory."""
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        leftover, stubborn = "leftover_worker" in faults, "ignore_sigterm" in faults
        _engine_core(gpus, mib, gpu, leftover, stubborn, write_fd)
    os.close(write_fd)
    with os.fdopen(read_fd) as report:
        answer = report.readline().strip()
    if answer != "ready":
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        raise EngineConfigError(
            (answer + "\n" if answer else "")
            + "RuntimeError: Engine core initialization failed. See root cause above. "
            f"Failed core proc(s): {{'EngineCore_DP0': {1 if answer else -9}}}"
        )
    return EngineCore(pid=pid, gpus=gpus)
