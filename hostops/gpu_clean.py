"""GPU-clean: after the service stopped, every GPU it will use is empty before anything starts.

`systemctl stop` returns when the unit's cgroup is empty, but a vLLM worker can outlive it
(KillMode=process, a worker that moved out of the cgroup) and keep tens of GiB on a GPU;
the next start then fails with "Free memory on device … is less than desired GPU memory
utilization", after a long model load. So the GPUs are read (NVML locally, nvidia-smi CSV
over SSH: `Transport.gpu_status`), every compute process is attributed, and:

- a leftover of the stopped service gets SIGTERM, then SIGKILL after a grace period; each
  signal is logged with PID, name, user, GPU and memory. "Of the service" means: in the
  unit's cgroup, or one of the service's processes seen before the stop (PID and start
  time), or a child of one, or one that escaped: the service's user, a vLLM process title
  (`VLLM::EngineCore`, `vllm serve`), no other unit's cgroup, and on a GPU the service
  uses (on other GPUs it may be another service's escaped worker, and is left alone);
- anyone else's GPU process is never signalled unless the policy allows it; on a GPU the
  service needs it ends the step: "GPU 5 is held by PID 4242 (python, user alice, 38 GiB)"
  ("GPUs 0-7 are held by …" with the total of all of them);
- the step succeeds only when every GPU the service will use (CUDA_VISIBLE_DEVICES read
  the way CUDA reads it, `linting.cuda`; every GPU when unset or when the value cannot be
  mapped to GPUs for certain, and the log says why) is at or below the threshold with no
  compute process, read back after the last process went away. Waits are event-driven: a
  host-side loop returns as soon as the PIDs are gone, then the GPUs are re-read at once
  and every 0.1–0.5 s; never a fixed sleep.

Stdlib, `hostops.channel.base`, `hostops.gpu_free` and `linting.cuda` only:
`benchmarks/gpu_clean_real.py` runs these very functions on real GPUs without Django
(docs/architecture.md, "The restart pipeline").
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from hostops.channel.base import GpuInfo, Transport
from hostops.gpu_free import DEFAULT_THRESHOLD_MIB, gpu_is_free
from hostops.processes import (
    ProcessInfo,
    alive,
    cgroup_members,
    descendants,
    process_table,
    read_processes,
    send_signal,
    wait_gone,
)
from linting.cuda import HostGpus, read_visible_devices, resolve

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_GRACE_S = 10.0
KILL_WAIT_S = 10.0  # SIGKILL → gone: the kernel only needs to tear the process down
FIRST_POLL_S = 0.1
MAX_POLL_S = 0.5
# What vLLM's processes look like in `ps`: setproctitle names (VLLM::EngineCore,
# VLLM::Worker_TP0) and the server's own command lines (vllm serve, python -m vllm...).
VLLM_TITLE = re.compile(r"VLLM::|(^|[\s/])vllm(\s|$)|-m\s+vllm\.|vllm\.entrypoints")
# Cgroups an escaped process ends up in (moved next to PID 1, or a host without systemd).
ESCAPE_CGROUPS = ("/", "/init.scope")
ESCAPED = "escaped the unit"
UNIT_PROPERTIES = ("MainPID", "ControlGroup", "User", "Environment", "ActiveState")

Log = Callable[[str], None]


@dataclass(frozen=True)
class CleanPolicy:
    """Per profile: what "clean" means and how long to try."""

    threshold_mib: int = DEFAULT_THRESHOLD_MIB
    timeout_s: float = DEFAULT_TIMEOUT_S  # the whole step, kills included
    grace_s: float = DEFAULT_GRACE_S  # SIGTERM → SIGKILL
    kill_foreign: bool = False  # also signal other people's processes on needed GPUs


@dataclass(frozen=True)
class ServiceIdentity:
    """Who "the service" is, read before it was stopped (`service_identity`)."""

    unit: str = ""  # "vllm-a.service"; "" where no systemd unit runs it
    cgroup: str = ""  # its ControlGroup ("/system.slice/vllm-a.service")
    user: str = "root"
    processes: frozenset[tuple[int, int]] = frozenset()  # (PID, start ticks) before the stop
    # CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER of what starts next (None: unset)
    visible_devices: str | None = None
    device_order: str | None = None

    @property
    def pids(self) -> set[int]:
        return {pid for pid, _ in self.processes}

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["processes"] = sorted([list(p) for p in self.processes])
        return data


@dataclass(frozen=True)
class GpuHolder:
    """A process with memory on one or more GPUs, and whose it is."""

    pid: int
    name: str
    user: str
    gpus: tuple[int, ...]
    mib: int
    ours: bool  # a leftover of the service (may be signalled)
    why: str  # how it was attributed

    def describe(self) -> str:
        return f"PID {self.pid} ({self.name}, user {self.user}, {format_mib(self.mib)})"


@dataclass
class CleanReport:
    """The outcome, every signal sent, and the timings `benchmarks/restart.py` reports."""

    clean: bool = False
    reason: str = ""
    checked: str = ""  # which GPUs are checked, and why (linting.cuda)
    kills: list[dict[str, Any]] = field(default_factory=list)
    left_alone: list[str] = field(default_factory=list)
    gpus: list[dict[str, Any]] = field(default_factory=list)  # the last reading
    polls: int = 0
    started_at: float = 0.0  # clock() values (time.monotonic by default)
    last_gone_at: float | None = None  # the last signalled process was gone
    verified_at: float | None = None  # every needed GPU read clean

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("last_gone_at", "verified_at"):
            value = data.pop(key)
            data[key.replace("_at", "_after_s")] = (
                None if value is None else round(value - self.started_at, 4)
            )
        data.pop("started_at")
        return data


# --------------------------------------------------------------------------------------
# formatting


def format_mib(mib: int) -> str:
    """38 GiB, 512 MiB: what a person reads in "GPU 5 is held by …"."""
    return f"{mib / 1024:.0f} GiB" if mib >= 1024 else f"{mib} MiB"


def format_gpus(indices: Sequence[int]) -> str:
    indices = sorted(set(indices))
    if len(indices) == 1:
        return f"GPU {indices[0]}"
    if indices and indices == list(range(indices[0], indices[-1] + 1)):
        return f"GPUs {indices[0]}-{indices[-1]}"
    return "GPUs " + ", ".join(map(str, indices))


def gpu_table(gpus: Sequence[GpuInfo]) -> list[dict[str, Any]]:
    """A GPU reading as JSON, for the step's record of what it read."""
    return [
        {
            "index": g.index,
            "uuid": g.uuid,
            "used_mib": g.memory_used_mib,
            "total_mib": g.memory_total_mib,
            "processes": [
                {"pid": p.pid, "name": p.name, "used_mib": p.used_mib} for p in g.processes
            ],
        }
        for g in sorted(gpus, key=lambda g: g.index)
    ]


# --------------------------------------------------------------------------------------
# which GPUs, whose processes


def needed_gpus(
    gpus: Sequence[GpuInfo], visible: str | None, device_order: str | None = None
) -> tuple[list[GpuInfo], str]:
    """The GPUs a process with this CUDA_VISIBLE_DEVICES uses, read the way CUDA reads it
    (`linting.cuda`), and the sentence that says so; every GPU where that cannot be told
    for certain. nvidia-smi and NVML both number GPUs in PCI bus order, which is CUDA's on
    a host of one GPU model or with CUDA_DEVICE_ORDER=PCI_BUS_ID."""
    ordered = sorted(gpus, key=lambda g: g.index)
    host = HostGpus(
        count=len(ordered),
        uuids=tuple(g.uuid for g in ordered),
        models=tuple(g.name for g in ordered),
    )
    chosen = resolve(read_visible_devices(visible), host, device_order)
    if chosen.indexes is None:
        return list(ordered), chosen.why
    by_index = {g.index: g for g in ordered}
    return [by_index[i] for i in chosen.indexes if i in by_index], chosen.why


def attribute(info: ProcessInfo | None, service: ServiceIdentity) -> tuple[bool, str]:
    """(is it the service's, why): the rules in the module docstring, in order."""
    if info is None:
        return False, "not visible in the host's /proc (another PID namespace?)"
    if service.cgroup and (
        info.cgroup == service.cgroup or info.cgroup.startswith(service.cgroup.rstrip("/") + "/")
    ):
        return True, f"in the unit's cgroup {service.cgroup}"
    if info.key in service.processes:
        return True, "one of the service's processes before the stop"
    if info.ppid in service.pids:
        return True, f"child of the service's PID {info.ppid}"
    if info.user == service.user and VLLM_TITLE.search(info.title):
        if info.cgroup in ESCAPE_CGROUPS:
            where = f"cgroup {info.cgroup}" if service.unit else "no unit"
            return True, f"{ESCAPED}: user {info.user}, vLLM title, {where}"
        return False, f"a vLLM process of user {info.user}, but in {info.cgroup}"
    return False, "not the service's"


def holders(
    gpus: Sequence[GpuInfo], infos: dict[int, ProcessInfo], service: ServiceIdentity
) -> list[GpuHolder]:
    """One entry per process (a process on several GPUs is listed once)."""
    by_pid: dict[int, list[tuple[int, int]]] = {}
    names: dict[int, str] = {}
    for gpu in gpus:
        for proc in gpu.processes:
            by_pid.setdefault(proc.pid, []).append((gpu.index, proc.used_mib or 0))
            names.setdefault(proc.pid, proc.name)
    result = []
    for pid, places in sorted(by_pid.items()):
        info = infos.get(pid)
        ours, why = attribute(info, service)
        result.append(
            GpuHolder(
                pid=pid,
                name=info.name if info else names[pid],
                user=info.user if info else "?",
                gpus=tuple(sorted({g for g, _ in places})),
                mib=sum(m for _, m in places),
                ours=ours,
                why=why,
            )
        )
    return result


def dirty_gpus(needed: Sequence[GpuInfo], threshold_mib: int) -> list[str]:
    """Why each needed GPU is not clean (empty: all clean). Clean is `hostops.gpu_free`'s
    "free", the same test the unit's own ExecStartPre= wait makes."""
    problems = []
    for g in sorted(needed, key=lambda g: g.index):
        if gpu_is_free(g.memory_used_mib, len(g.processes), threshold_mib):
            continue
        if g.processes:
            pids = ", ".join(str(p.pid) for p in g.processes)
            problems.append(f"GPU {g.index}: compute process {pids}")
        else:
            problems.append(
                f"GPU {g.index}: {g.memory_used_mib:,} MiB used (threshold {threshold_mib:,} "
                "MiB) with no compute process listed"
            )
    return problems


# --------------------------------------------------------------------------------------
# reading the service before the stop


def parse_environment(value: str) -> dict[str, str]:
    """`systemctl show -p Environment` (space-separated, values with spaces quoted)."""
    try:
        words = shlex.split(value)
    except ValueError:
        words = value.split()
    env = {}
    for word in words:
        key, sep, val = word.partition("=")
        if sep:
            env[key] = val
    return env


def service_identity(transport: Transport, unit: str) -> ServiceIdentity:
    """Read, before `systemctl stop`, who the service is: its cgroup, user, processes
    (the cgroup's members and every descendant of them and of MainPID, with start times)
    and the GPUs the unit as loaded now will use (after a push + daemon-reload that is
    the new unit's CUDA_VISIBLE_DEVICES)."""
    props = transport.unit_properties(unit, UNIT_PROPERTIES)
    cgroup = props.get("ControlGroup", "")
    roots = cgroup_members(transport, cgroup)
    main_pid = int(props.get("MainPID") or 0)
    if main_pid > 0:
        roots.add(main_pid)
    pids = descendants(process_table(transport), roots) if roots else set()
    infos = read_processes(transport, pids)
    env = parse_environment(props.get("Environment", ""))
    return ServiceIdentity(
        unit=unit,
        cgroup=cgroup or f"/system.slice/{unit}",
        user=props.get("User") or "root",
        processes=frozenset(i.key for i in infos.values()),
        visible_devices=env.get("CUDA_VISIBLE_DEVICES"),
        device_order=env.get("CUDA_DEVICE_ORDER"),
    )


# --------------------------------------------------------------------------------------
# the clean-up


def clean_gpus(
    transport: Transport,
    service: ServiceIdentity,
    policy: CleanPolicy = CleanPolicy(),
    *,
    log: Log = lambda line: None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    cancelled: Callable[[], bool] = lambda: False,
) -> CleanReport:
    """Signal the service's GPU leftovers and verify every needed GPU is clean.

    Never raises for a dirty host: `report.clean` and `report.reason` say what was found.
    Transport errors (host unreachable, no nvidia-smi) propagate.
    """
    report = CleanReport(started_at=clock())
    deadline = report.started_at + policy.timeout_s
    delay = FIRST_POLL_S
    seen_foreign: set[int] = set()
    gone: set[int] = set()  # signalled and exited; the driver may still list them briefly
    while True:
        reading = _read_holders(transport, service, report, log)
        _note_left_alone(reading, seen_foreign, report, log)
        victims = [h for h in reading.victims(policy.kill_foreign) if h.pid not in gone]
        if victims:
            problem = _terminate(transport, victims, policy, deadline, report, log, clock)
            if problem:
                report.reason = problem
                return report
            gone.update(h.pid for h in victims)
            continue  # read again at once: the memory is usually free already
        blocking = [h for h in reading.blocking if h.pid not in gone]
        if blocking:
            report.reason = _refuse_blocking(blocking, reading.needed_idx, log)
            return report
        problems = dirty_gpus(reading.needed, policy.threshold_mib)
        if not problems:
            _mark_clean(report, reading.needed, policy.threshold_mib, log, clock)
            return report
        now = clock()
        reason = _why_stop_waiting(problems, now >= deadline, policy.timeout_s, cancelled)
        if reason:
            report.reason = reason
            return report
        sleep(min(delay, max(0.0, deadline - now)))
        delay = min(delay * 1.5, MAX_POLL_S)


@dataclass(frozen=True)
class _Reading:
    """One reading of the GPUs: those the service needs and every process on any GPU."""

    needed: list[GpuInfo]
    needed_idx: set[int]
    found: list[GpuHolder]

    def _ours(self, h: GpuHolder) -> bool:
        """The service's: by cgroup, PID or parent for certain; one that only looks
        escaped (user and vLLM title) only where it holds a GPU the service needs: on
        other GPUs it may be another service's, whose unit let it escape."""
        if not h.ours:
            return False
        return not h.why.startswith(ESCAPED) or bool(set(h.gpus) & self.needed_idx)

    @property
    def ours(self) -> list[GpuHolder]:
        return [h for h in self.found if self._ours(h)]

    @property
    def blocking(self) -> list[GpuHolder]:
        """Other processes on a GPU the service needs."""
        return [h for h in self.found if not self._ours(h) and set(h.gpus) & self.needed_idx]

    @property
    def elsewhere(self) -> list[GpuHolder]:
        """Other processes only on GPUs the service does not use."""
        return [h for h in self.found if not self._ours(h) and not set(h.gpus) & self.needed_idx]

    def victims(self, kill_foreign: bool) -> list[GpuHolder]:
        return self.ours + (self.blocking if kill_foreign else [])


def _read_holders(
    transport: Transport, service: ServiceIdentity, report: CleanReport, log: Log
) -> _Reading:
    """Read the GPUs (one poll, kept as the report's last table) and attribute every
    process on them."""
    gpus = transport.gpu_status()
    report.polls += 1
    report.gpus = gpu_table(gpus)
    needed, why = needed_gpus(gpus, service.visible_devices, service.device_order)
    if why != report.checked:
        report.checked = why
        log(f"GPUs to check: {why}")
    pids = {p.pid for g in gpus for p in g.processes}
    infos = read_processes(transport, pids) if pids else {}
    return _Reading(needed, {g.index for g in needed}, holders(gpus, infos, service))


def _note_left_alone(
    reading: _Reading, seen_foreign: set[int], report: CleanReport, log: Log
) -> None:
    """Log, once per process, another user's GPU process that is not in the way."""
    for h in reading.elsewhere:
        if h.pid not in seen_foreign:
            seen_foreign.add(h.pid)
            note = f"left alone: {h.describe()} on {format_gpus(h.gpus)}, not used here"
            report.left_alone.append(note)
            log(note)


def _refuse_blocking(blocking: list[GpuHolder], needed_idx: set[int], log: Log) -> str:
    """Log each process in the way that may not be signalled; the step's reason."""
    for h in blocking:
        log(f"not signalled: {h.describe()} on {format_gpus(h.gpus)}: {h.why}")
    return "; ".join(_held(h, [g for g in h.gpus if g in needed_idx]) for h in blocking) + (
        " — not the service's; it is never killed unless the profile allows "
        "killing other GPU processes"
    )


def _held(holder: GpuHolder, gpus: list[int]) -> str:
    """Every needed GPU the process holds: its memory is their total, not one GPU's."""
    verb = "is" if len(set(gpus)) == 1 else "are"
    return f"{format_gpus(gpus)} {verb} held by {holder.describe()}"


def _mark_clean(
    report: CleanReport,
    needed: list[GpuInfo],
    threshold_mib: int,
    log: Log,
    clock: Callable[[], float],
) -> None:
    report.verified_at = clock()
    report.clean = True
    used = ", ".join(f"{g.index}:{g.memory_used_mib}" for g in needed)
    log(
        f"clean: {format_gpus([g.index for g in needed]) if needed else 'no GPU'} "
        f"at or below {threshold_mib:,} MiB with no compute process "
        f"(MiB used {used or '-'}; {report.polls} reading(s))"
    )


def _why_stop_waiting(
    problems: list[str], past_deadline: bool, timeout_s: float, cancelled: Callable[[], bool]
) -> str:
    """Why waiting for dirty GPUs ends now (a cancel, then the deadline); "" to go on."""
    if cancelled():
        return "cancelled while waiting for the GPUs: " + "; ".join(problems)
    if past_deadline:
        return f"GPUs not clean after {timeout_s:g} s: " + "; ".join(problems)
    return ""


def _terminate(
    transport: Transport,
    victims: list[GpuHolder],
    policy: CleanPolicy,
    deadline: float,
    report: CleanReport,
    log: Log,
    clock: Callable[[], float],
) -> str:
    """SIGTERM, the grace period, SIGKILL for survivors; "" when all are gone, else why."""
    pids = [h.pid for h in victims]
    by_pid = {h.pid: h for h in victims}
    _signal(transport, victims, "TERM", report, log, clock)
    grace = max(0.0, min(policy.grace_s, deadline - clock()))
    if wait_gone(transport, pids, grace):
        report.last_gone_at = clock()
        return ""
    survivors = alive(transport, pids)
    if not survivors:
        report.last_gone_at = clock()
        return ""
    _signal(
        transport,
        [by_pid[p] for p in survivors],
        "KILL",
        report,
        log,
        clock,
        note=f"still alive {policy.grace_s:g} s after SIGTERM",
    )
    if wait_gone(transport, survivors, max(1.0, min(KILL_WAIT_S, deadline - clock()))):
        report.last_gone_at = clock()
        return ""
    left = alive(transport, survivors)
    return "survived SIGKILL (stuck in the kernel?): " + ", ".join(
        by_pid[p].describe() for p in left
    )


def _signal(
    transport: Transport,
    victims: list[GpuHolder],
    signal: str,
    report: CleanReport,
    log: Log,
    clock: Callable[[], float],
    note: str = "",
) -> None:
    delivered = send_signal(transport, [h.pid for h in victims], signal)
    at = round(clock() - report.started_at, 4)
    for h in victims:
        sent = delivered.get(h.pid, False)
        line = (
            f"SIG{signal} {h.describe()} on {format_gpus(h.gpus)}: {h.why}"
            + (f"; {note}" if note else "")
            + ("" if sent else " (already gone)")
        )
        log(line)
        report.kills.append(
            {
                "signal": f"SIG{signal}",
                "pid": h.pid,
                "name": h.name,
                "user": h.user,
                "gpus": list(h.gpus),
                "mib": h.mib,
                "why": h.why,
                "delivered": sent,
                "after_s": at,
            }
        )


__all__ = [
    "DEFAULT_GRACE_S",
    "DEFAULT_THRESHOLD_MIB",
    "DEFAULT_TIMEOUT_S",
    "CleanPolicy",
    "CleanReport",
    "GpuHolder",
    "ServiceIdentity",
    "attribute",
    "clean_gpus",
    "dirty_gpus",
    "format_gpus",
    "format_mib",
    "gpu_table",
    "holders",
    "needed_gpus",
    "parse_environment",
    "service_identity",
]
