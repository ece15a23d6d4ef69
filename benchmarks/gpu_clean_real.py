"""GPU-clean on real CUDA processes: specadmin's own inspection and clean-up code, the very
functions the pipeline's `gpu_clean` step calls (`hostops.gpu_clean.clean_gpus`),
through the local transport's NVML path and its nvidia-smi CSV path.

Run on a machine with NVIDIA GPUs, PyTorch with CUDA, nvidia-ml-py and nvidia-smi; no
Django, systemd or paramiko are needed:

    PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 python3 benchmarks/gpu_clean_real.py [--gib 20]

What it does, printing every step (exit status 1 if a check fails):
1. one GPU: a "service" (a parent with a worker that dies with it, and an EngineCore-like
   child in its own session that ignores SIGTERM, titled `VLLM::EngineCore`), each child
   holding `--gib` GiB, plus a "foreign" process (user nobody where possible) holding as
   much. Both probes (NVML, nvidia-smi) list every PID with its memory: they must agree.
   The service is stopped through its parent; clean_gpus (NVML path) SIGTERMs, then
   SIGKILLs the leftover, leaves the foreign process alone and says so (the GPU is not
   clean while it runs). Then the foreign process ends and a new leftover is cleaned
   through the nvidia-smi path: clean.
2. timing, same run: SIGKILL → "verified clean" as specadmin sees it, against the seed's
   fixed `sleep 5 … sleep 3 … sleep 2` sequence.
3. two or more GPUs: one holder per GPU plus a leftover on the last GPU only; specadmin
   finds it, a check of the first GPU only (the seed's `head -n 1`) says "clean"; and a
   two-process NCCL group (one process per GPU) stopped through its parent with rank 1
   left behind.

`--double` runs the same choreography against the repository's GPU doubles (nvidia-smi
and NVML doubles, memory "held" by registration) on a machine without GPUs: that is how
the script itself is tested (tests/gpu/test_gpu_clean_real.py).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import json
import os
import pwd
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hostops.channel.base import GpuInfo, Transport  # noqa: E402
from hostops.channel.local import LocalTransport  # noqa: E402
from hostops.gpu_clean import (  # noqa: E402  (after the path insert)
    CleanPolicy,
    ServiceIdentity,
    clean_gpus,
    format_mib,
)
from hostops.processes import descendants, process_table, read_processes  # noqa: E402
from tests.doubles import gpu_state  # noqa: E402
from tests.doubles.nvml_double import NvmlDouble  # noqa: E402
from watchdog.checks import GPU_FOREIGN, GPU_LEFTOVER, Watched, check_gpus  # noqa: E402

SEED_SLEEPS = (5, 3, 2)  # the seed deployment's fixed waits after a stop
NOBODY = 65534
PR_SET_CHILD_SUBREAPER = 36

# The code every holder runs: hold memory on its GPU(s), optionally leave its parent's
# session and ignore SIGTERM (the escaped EngineCore), optionally die with its parent,
# optionally join an NCCL group first. One JSON line on stdout when the memory is held.
HOLDER = r"""
import json, os, signal, sys, time
cfg = json.loads(sys.argv[1])
if cfg.get("setsid"):
    os.setsid()
if cfg.get("ignore_term"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
if cfg.get("title"):
    title = cfg["title"]
    try:
        with open("/proc/self/comm", "w") as f:
            f.write(title[:15])
        with open("/proc/self/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        start, end = int(rest[45]), int(rest[46])
        data = title.encode()[: end - start - 1].ljust(end - start, b"\0")
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(start)
            mem.write(data)
    except OSError:
        pass  # the title stays in argv (see --title below)
parent = os.getppid()
if cfg["mode"] == "double":
    sys.path.insert(0, cfg["repo"])
    from tests.doubles import gpu_state
    c = gpu_state.load_config()
    for gpu in cfg["gpus"]:
        gpu_state.register(c, gpu, os.getpid(), cfg["mib"])
    held = []
else:
    import torch
    if cfg.get("nccl"):
        import torch.distributed as dist
        torch.cuda.set_device(cfg["gpus"][0])
        dist.init_process_group("nccl", rank=cfg["rank"], world_size=cfg["world"])
        t = torch.ones(1024, device="cuda")
        dist.all_reduce(t)
        torch.cuda.synchronize()
    held = [torch.empty(cfg["mib"] << 20, dtype=torch.uint8, device=f"cuda:{g}")
            for g in cfg["gpus"]]
    torch.cuda.synchronize()
print(json.dumps({"pid": os.getpid(), "ready": True}), flush=True)
while True:
    if cfg.get("die_with_parent") and os.getppid() != parent:
        os._exit(0)
    time.sleep(0.05)
"""

# A parent ("the service's main process") that starts its children and waits; on SIGTERM
# it exits without touching them, as a server whose workers outlive a stop would.
PARENT = r"""
import json, os, signal, subprocess, sys, time
spec = json.loads(sys.argv[1])
signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
children = []
for child in spec["children"]:
    argv = [sys.executable, "-c", spec["holder"], json.dumps(child)]
    if child.get("title"):
        argv += ["--title", child["title"]]
    children.append(subprocess.Popen(argv, stdout=subprocess.PIPE, env=child.get("env")))
for c in children:
    line = c.stdout.readline()
    if not line:
        print(json.dumps({"error": "a child failed to start"}), flush=True)
        os._exit(1)
print(json.dumps({"pids": [c.pid for c in children]}), flush=True)
while True:
    time.sleep(1)
"""


# --------------------------------------------------------------------------------------
# transports: NVML (LocalTransport) and nvidia-smi CSV (Transport.gpu_status, locally)


class SmiTransport(LocalTransport):
    """The local transport, reading GPUs with nvidia-smi CSV (the SSH path's parser)."""

    def gpu_status(self) -> list[GpuInfo]:
        return Transport.gpu_status(self)


def probe_listing(gpus: list[GpuInfo]) -> dict[int, dict[int, int | None]]:
    return {g.index: {p.pid: p.used_mib for p in g.processes} for g in gpus}


# --------------------------------------------------------------------------------------
# running holders


@dataclass
class Run:
    mode: str  # "real" | "double"
    gib: float
    grace: float
    env: dict[str, str]
    seed_scale: float = 1.0
    nvml: Any = None
    started: list[subprocess.Popen] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def mib(self) -> int:
        return int(self.gib * 1024)

    def check(self, ok: bool, what: str) -> None:
        print(("  PASS " if ok else "  FAIL ") + what, flush=True)
        if not ok:
            self.failures.append(what)

    def transport(self, path: str) -> LocalTransport:
        cls = LocalTransport if path == "nvml" else SmiTransport
        return cls(nvml=self.nvml)

    def holder_cfg(self, gpus: list[int], **extra: Any) -> dict[str, Any]:
        return {"mode": self.mode, "repo": str(ROOT), "gpus": gpus, "mib": self.mib, **extra}

    def spawn_holder(
        self, cfg: dict[str, Any], *, user: int | None = None, title: str = ""
    ) -> subprocess.Popen:
        argv = [sys.executable, "-c", HOLDER, json.dumps(cfg)]
        if title:
            argv += ["--title", title]
        env = dict(self.env)
        preexec = None
        if user is not None:
            env["HOME"] = "/tmp"

            def preexec() -> None:
                os.setgid(user)
                os.setuid(user)

        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, env=env, preexec_fn=preexec)
        self.started.append(proc)
        line = proc.stdout.readline() if proc.stdout else b""
        if not line:
            raise RuntimeError(f"holder {cfg} did not start (exit {proc.wait(30)})")
        return proc

    def spawn_service(self, children: list[dict[str, Any]]) -> tuple[subprocess.Popen, list[int]]:
        for child in children:
            child.setdefault("env", self.env)
        spec = {"holder": HOLDER, "children": children}
        parent = subprocess.Popen(
            [sys.executable, "-c", PARENT, json.dumps(spec)], stdout=subprocess.PIPE, env=self.env
        )
        self.started.append(parent)
        line = parent.stdout.readline() if parent.stdout else b""
        answer = json.loads(line or b"{}")
        if "pids" not in answer:
            raise RuntimeError(f"the service did not start: {answer}")
        return parent, answer["pids"]

    def stop_all(self) -> None:
        for proc in self.started:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
        for proc in self.started:
            with contextlib.suppress(Exception):
                proc.wait(10)


def identity_of(transport: Transport, parent_pid: int) -> ServiceIdentity:
    """What the pipeline reads before `systemctl stop`, minus systemd: the parent and
    every descendant with start times, the user; all GPUs needed."""
    pids = descendants(process_table(transport), [parent_pid])
    infos = read_processes(transport, pids)
    return ServiceIdentity(
        user=pwd.getpwuid(os.getuid()).pw_name,
        processes=frozenset(i.key for i in infos.values()),
    )


def identity_of_pid(transport: Transport, pid: int) -> ServiceIdentity:
    """A service that is just this one (left-over) process."""
    return ServiceIdentity(
        user=pwd.getpwuid(os.getuid()).pw_name,
        processes=frozenset({read_processes(transport, [pid])[pid].key}),
    )


def wait_exited(pids: list[int], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in pids):
        time.sleep(0.02)


def stop_through_parent(parent: subprocess.Popen) -> None:
    parent.send_signal(signal.SIGTERM)
    parent.wait(30)


def show_probes(run: Run, what: str) -> dict[int, dict[int, int | None]]:
    nvml = probe_listing(run.transport("nvml").gpu_status())
    smi = probe_listing(run.transport("smi").gpu_status())
    print(f"  probes ({what}):")
    for gpu in sorted(nvml):
        print(f"    GPU {gpu}  NVML {nvml[gpu] or '-'}   nvidia-smi {smi.get(gpu) or '-'}")
    run.check(nvml == smi, f"NVML and nvidia-smi list the same PIDs and MiB ({what})")
    return nvml


def busy_before_the_run(run: Run) -> list[str]:
    """Compute processes already on the GPUs: every check below counts the processes it
    started, so an earlier holder (another benchmark, a test's model) would make them lie."""
    listing = probe_listing(run.transport("nvml").gpu_status())
    return [f"GPU {gpu}: {pids}" for gpu, pids in sorted(listing.items()) if pids]


def clean(run: Run, path: str, identity: ServiceIdentity, **policy: Any) -> tuple[Any, list[str]]:
    log: list[str] = []
    t = run.transport(path)
    policy.setdefault("grace_s", run.grace)
    policy.setdefault("timeout_s", 120)
    report = clean_gpus(t, identity, CleanPolicy(**policy), log=log.append)
    print(f"  clean_gpus via {path}: clean={report.clean} polls={report.polls}")
    for line in log:
        print(f"    {line}")
    if report.reason:
        print(f"    reason: {report.reason}")
    return report, log


# --------------------------------------------------------------------------------------
# scenarios


def one_gpu(run: Run) -> None:
    print(f"\n== one GPU: service (worker + escaped EngineCore) + foreign, {run.gib:g} GiB each")
    parent, (worker, engine) = run.spawn_service(
        [
            run.holder_cfg([0], die_with_parent=True),
            run.holder_cfg([0], setsid=True, ignore_term=True, title="VLLM::EngineCore"),
        ]
    )
    try:
        foreign = run.spawn_holder(run.holder_cfg([0]), user=NOBODY)
        foreign_user = "nobody"
    except (RuntimeError, OSError) as exc:
        print(f"  (a process of user nobody could not hold GPU memory: {exc}; the foreign")
        print("   process runs as this user, outside the service and with a plain title)")
        foreign = run.spawn_holder(run.holder_cfg([0]))
        foreign_user = pwd.getpwuid(os.getuid()).pw_name
    t = run.transport("nvml")
    identity = identity_of(t, parent.pid)
    listed = show_probes(run, "before the stop")
    run.check(
        {worker, engine, foreign.pid} <= set(listed.get(0, {})),
        "both probes list the worker, the EngineCore and the foreign process on GPU 0",
    )
    stop_through_parent(parent)
    wait_exited([worker])  # the worker notices its parent is gone
    listed = show_probes(run, "after stopping the service through its parent")
    run.check(engine in listed.get(0, {}), "the escaped EngineCore survived the stop")
    watchdog_sees(run, t, identity, engine, foreign.pid)

    report, _ = clean(run, "nvml", identity)
    signals = [(k["signal"], k["pid"]) for k in report.kills]
    run.check(
        signals == [("SIGTERM", engine), ("SIGKILL", engine)],
        f"SIGTERM then SIGKILL of the EngineCore only: {signals}",
    )
    run.check(
        not report.clean and f"GPU 0 is held by PID {foreign.pid}" in report.reason,
        "the foreign process is left alone, named, and the GPU is not called clean",
    )
    run.check(foreign.poll() is None, f"the foreign process (user {foreign_user}) still runs")

    foreign.send_signal(signal.SIGKILL)
    foreign.wait(30)
    leftover = run.spawn_holder(run.holder_cfg([0], ignore_term=True, title="VLLM::EngineCore"))
    report, _ = clean(run, "smi", identity_of_pid(t, leftover.pid))
    run.check(report.clean, "after the foreign process ended: clean through nvidia-smi")
    show_probes(run, "at the end")


def watchdog_sees(
    run: Run, t: Transport, identity: ServiceIdentity, engine: int, foreign: int
) -> None:
    """The watchdog's GPU check between jobs (`watchdog.checks.check_gpus`, the function
    its periodic check calls) on the same readings: the escaped EngineCore is a leftover
    of the stopped service, the other process is named as holding the service's GPU."""
    gpus = t.gpu_status()
    infos = read_processes(t, {p.pid for g in gpus for p in g.processes})
    service = dataclasses.replace(identity, unit="vllm-test.service")
    verdict = check_gpus(gpus, infos, [Watched(service, running=False)])
    for finding in verdict.findings:
        print(f"  watchdog: {finding.kind}: {finding.summary}")
    found = {(f.kind, f.evidence.get("pid")) for f in verdict.findings}
    run.check(
        (GPU_LEFTOVER, engine) in found,
        "the watchdog's GPU check names the escaped EngineCore a leftover of the stopped service",
    )
    run.check(
        (GPU_FOREIGN, foreign) in found,
        "the watchdog's GPU check names the foreign process on the service's GPU",
    )


def timing(run: Run) -> None:
    print("\n== timing: SIGKILL → verified clean, specadmin against the seed's fixed sleeps")
    t = run.transport("nvml")
    leftover = run.spawn_holder(run.holder_cfg([0], ignore_term=True, title="VLLM::EngineCore"))
    report, _ = clean(run, "nvml", identity_of_pid(t, leftover.pid), grace_s=0.0)
    kill = next(k for k in report.kills if k["signal"] == "SIGKILL")
    verified = report.as_json()["verified_after_s"]
    ours = None if verified is None else verified - kill["after_s"]

    # The seed: kill, then its fixed waits, then one look at the GPUs.
    seed_victim = run.spawn_holder(run.holder_cfg([0]))
    started = time.monotonic()
    seed_victim.send_signal(signal.SIGKILL)
    for pause in SEED_SLEEPS:
        time.sleep(pause * run.seed_scale)
    out = subprocess.run(
        ["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        env=run.env,
    ).stdout.split()
    seed_clean_after = None if str(seed_victim.pid) in out else time.monotonic() - started
    seed_victim.wait(10)
    if ours is not None:
        print(f"  specadmin: SIGKILL → verified clean {ours:.3f} s")
    sleeps = " … ".join(f"sleep {p * run.seed_scale:g}" for p in SEED_SLEEPS)
    print(
        f"  seed ({sleeps}, then nvidia-smi): "
        + (f"{seed_clean_after:.3f} s" if seed_clean_after else "not clean")
    )
    run.check(report.clean and ours is not None, "specadmin verified the GPU clean")


def last_gpu(run: Run, count: int) -> None:
    print(f"\n== {count} GPUs: one holder per GPU, a leftover on the last GPU only")
    last = count - 1
    children = [run.holder_cfg([g], die_with_parent=True) for g in range(count)]
    children.append(run.holder_cfg([last], setsid=True, ignore_term=True, title="VLLM::Worker_TP1"))
    parent, pids = run.spawn_service(children)
    t = run.transport("nvml")
    identity = identity_of(t, parent.pid)
    stop_through_parent(parent)
    wait_exited(pids[:-1])
    show_probes(run, "after the stop")
    head = subprocess.run(
        "nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -n 1",
        shell=True,
        capture_output=True,
        text=True,
        env=run.env,
    ).stdout.strip()
    seed_clean = head.isdigit() and int(head) <= 1000
    print(f"  seed's check of the first GPU only (head -n 1): {head} MiB → clean={seed_clean}")
    run.check(seed_clean, f"the first-GPU-only check calls the host clean (it misses GPU {last})")
    report, _ = clean(run, "smi", identity)
    run.check(
        [k["pid"] for k in report.kills][:1] == [pids[-1]] and report.clean,
        f"specadmin finds the leftover on GPU {last}, kills it and verifies every GPU",
    )


def nccl_group(run: Run) -> None:
    print("\n== NCCL group: two processes (one per GPU) stopped through their parent")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(run.env, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    children = [
        run.holder_cfg([0], nccl=True, rank=0, world=2, die_with_parent=True),
        run.holder_cfg(
            [1], nccl=True, rank=1, world=2, setsid=True, ignore_term=True, title="VLLM::Worker_TP1"
        ),
    ]
    for child in children:
        child["env"] = env
    parent, pids = run.spawn_service(children)
    t = run.transport("nvml")
    identity = identity_of(t, parent.pid)
    stop_through_parent(parent)
    wait_exited(pids[:1])
    show_probes(run, "after the stop")
    report, _ = clean(run, "nvml", identity)
    run.check(
        report.clean and pids[1] in [k["pid"] for k in report.kills],
        "rank 1, left behind, is killed and both GPUs verified clean",
    )


# --------------------------------------------------------------------------------------
# set-up


@contextlib.contextmanager
def double_environment(gpus: int) -> Iterator[tuple[dict[str, str], Any]]:
    """The repository's GPU doubles: a temp state dir, nvidia-smi on PATH, NVML double."""
    with tempfile.TemporaryDirectory(prefix="gpu-clean-real-") as tmp:
        config = Path(tmp) / "config.json"
        config.write_text(json.dumps({"gpu_count": gpus, "state_dir": f"{tmp}/state"}))
        bin_dir = Path(tmp) / "bin"
        bin_dir.mkdir()
        smi = bin_dir / "nvidia-smi"
        smi.write_text(
            f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m "
            'tests.doubles.nvidia_smi_double "$@"\n'
        )
        smi.chmod(0o755)
        env = dict(os.environ, GPU_DOUBLE_CONFIG=str(config))
        env["PATH"] = f"{bin_dir}:{env.get('PATH', '')}"
        saved = dict(os.environ)
        os.environ.update(env)  # LocalTransport's commands inherit it
        try:
            yield env, NvmlDouble(gpu_state.load_config(str(config)))
        finally:
            os.environ.clear()
            os.environ.update(saved)


def reap_orphans() -> None:
    """Adopt orphans (the escaped holders) and reap them, so none lingers as a zombie
    when this runs as PID 1's child in a container whose init does not reap."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)

    def loop() -> None:
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                time.sleep(0.05)

    threading.Thread(target=loop, daemon=True).start()


def gpu_count(mode: str, requested: int) -> int:
    if mode == "double":
        return requested
    import pynvml  # noqa: PLC0415 (optional: the --double mode runs without NVML)

    pynvml.nvmlInit()
    try:
        return pynvml.nvmlDeviceGetCount()
    finally:
        pynvml.nvmlShutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gib", type=float, default=20.0, help="GiB each holder allocates")
    parser.add_argument("--grace", type=float, default=3.0, help="SIGTERM → SIGKILL seconds")
    parser.add_argument("--double", action="store_true", help="run against the GPU doubles")
    parser.add_argument("--gpus", type=int, default=2, help="GPUs of the double (--double)")
    parser.add_argument(
        "--seed-scale", type=float, default=1.0, help="scale the seed's sleeps (tests only)"
    )
    args = parser.parse_args(argv)
    mode = "double" if args.double else "real"
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")
    reap_orphans()
    context = (
        double_environment(args.gpus)
        if args.double
        else contextlib.nullcontext((dict(os.environ), None))
    )
    with context as (env, nvml):
        run = Run(
            mode=mode,
            gib=args.gib,
            grace=args.grace,
            env=env,
            nvml=nvml,
            seed_scale=args.seed_scale,
        )
        count = gpu_count(mode, args.gpus)
        print(
            f"specadmin gpu_clean_real: mode={mode}, {count} GPU(s), {format_mib(run.mib)} "
            f"per holder, grace {run.grace:g} s"
        )
        busy = busy_before_the_run(run)
        if busy:
            print(f"refused: the GPUs hold compute processes before the run: {busy}")
            return 2
        try:
            one_gpu(run)
            timing(run)
            if count >= 2:
                last_gpu(run, count)
                if mode == "real":
                    nccl_group(run)
            else:
                print("\n(one GPU: the last-GPU and NCCL scenarios need two or more GPUs)")
        finally:
            run.stop_all()
    print(
        "\nRESULT: "
        + (
            "all checks passed"
            if not run.failures
            else f"{len(run.failures)} check(s) failed: {run.failures}"
        )
    )
    return 1 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main())
