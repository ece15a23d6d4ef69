"""Reading a host for the checks, through its Transport (`hostops`): per watched unit its
state (`systemctl show`), its file, and /metrics while it runs (asked on the host, as the
readiness step asks /health: `hostops.http_on_host.http_get`); then the GPUs and
who holds them. Every reading that fails is kept with its reason, never left out: a
check with no reading is not judged, and the failure becomes an `unreachable` finding.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hostops.channel import Transport
from hostops.channel.base import GpuInfo
from hostops.channel.push import MAX_UNIT_BYTES
from hostops.http_on_host import http_get
from hostops.processes import ProcessInfo, read_processes
from hostops.unit_paths import waiting_drop_ins
from watchdog.canary import CanaryResult, ask_canary
from watchdog.checks import (
    MAX_DROP_INS,
    UNIT_PROPERTIES,
    DropIn,
    UnitState,
    own_drop_in_paths,
    readable_drop_in,
    unit_state,
)
from watchdog.metrics import MetricsUnreadable, Sample, parse

UNIT_DIR = "/etc/systemd/system"
SSH = "ssh"


@dataclass(frozen=True)
class Target:
    """A unit specadmin deployed on the host, and what it was approved as."""

    unit: str  # without ".service"
    approved_text: str
    version: str = ""  # "vllm-a v3", for the pages
    base_url: str = ""  # where the server answers on the host; "" : not a vLLM server
    api_key: str = ""
    model: str = ""  # the served model name (the canary asks for it)
    expected_acceptance: float | None = None  # percent, from the benchmark (perf)
    # (path, sha256) of the drop-ins the approved deploy was made with (adopted by an
    # admin: deploys.existing_units); any other drop-in of the unit is drift.
    approved_drop_ins: tuple[tuple[str, str], ...] = ()


@dataclass
class UnitRead:
    target: Target
    state: UnitState | None = None
    file: bytes | None = None
    file_read: bool = False
    drop_ins: list[DropIn] | None = None  # None: not read (its check is not judged)
    sample: Sample | None = None
    canary: CanaryResult | None = None


@dataclass
class HostRead:
    at: float
    units: list[UnitRead] = field(default_factory=list)
    gpus: list[GpuInfo] | None = None
    infos: dict[int, ProcessInfo] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    canary: bool = False  # the one-token canary was to be asked of each running server


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:2000]


def read_host(
    transport: Transport,
    targets: Sequence[Target],
    *,
    unit_dir: str = UNIT_DIR,
    gpus: bool = True,
    clock: Callable[[], float] = time.time,
    canary_s: float | None = None,
) -> HostRead:
    """One reading of everything the checks need (`gpus` False: a host the probe found
    without GPUs is not asked for them; `canary_s`: the one-token canary's deadline, None
    when the host's watch has it off). A failure of the first command (the connection)
    ends it: nothing else would be read either."""
    started = time.monotonic()
    read = HostRead(at=clock(), canary=canary_s is not None)
    for index, target in enumerate(targets):
        unit = UnitRead(target)
        read.units.append(unit)
        try:
            props = transport.unit_properties(f"{target.unit}.service", UNIT_PROPERTIES)
            unit.state = unit_state(target.unit, props)
        except Exception as exc:
            if index == 0:
                read.errors[SSH] = _reason(exc)
                read.seconds = time.monotonic() - started
                return read
            read.errors[f"unit:{target.unit}"] = _reason(exc)
        _read_files(transport, unit, unit_dir, read.errors)
        if unit.state is not None and unit.state.running and target.base_url:
            _read_server(transport, unit, read.errors, clock, canary_s)
    if not gpus:  # the probe found none: nothing to hold
        read.seconds = time.monotonic() - started
        return read
    try:
        read.gpus = transport.gpu_status()
        pids = {p.pid for g in read.gpus for p in g.processes}
        read.infos = read_processes(transport, pids) if pids else {}
    except Exception as exc:
        if not targets:
            read.errors[SSH] = _reason(exc)
        else:
            read.errors["gpus"] = _reason(exc)
        read.gpus = None
    read.seconds = time.monotonic() - started
    return read


def _read_server(
    transport: Transport,
    unit: UnitRead,
    errors: dict[str, str],
    clock: Callable[[], float],
    canary_s: float | None,
) -> None:
    """A running vLLM server's /metrics, then (when on) the one-token canary."""
    name = unit.target.unit
    try:
        unit.sample = _metrics(transport, unit.target, clock)
    except Exception as exc:
        errors[f"metrics:{name}"] = _reason(exc)
    if canary_s is not None:
        try:
            unit.canary = ask_canary(transport, unit.target, deadline_s=canary_s)
        except Exception as exc:
            errors[f"canary:{name}"] = _reason(exc)


def _read_files(
    transport: Transport, unit: UnitRead, unit_dir: str, errors: dict[str, str]
) -> None:
    """The unit file, then (its state read) the unit's drop-ins; each failure kept."""
    name = unit.target.unit
    try:
        unit.file = transport.read_file(f"{unit_dir}/{name}.service")
        unit.file_read = True
    except Exception as exc:
        errors[f"file:{name}"] = _reason(exc)
    if unit.state is not None:
        try:
            unit.drop_ins = read_drop_ins(transport, name, unit.state.drop_in_paths)
        except Exception as exc:
            errors[f"dropins:{name}"] = _reason(exc)


DROP_IN_PATH_CHARS = 1000
LISTED_DROP_INS = 50  # beyond MAX_DROP_INS named by path only, up to this many


def read_drop_ins(transport: Transport, unit: str, reported: str) -> list[DropIn]:
    """The unit's own drop-ins: those systemd loaded (DropInPaths), then those in the unit
    directories it has not loaded yet (added without a daemon-reload: they apply at the
    next one), one per file name, the higher directory first (systemd.unit(5)). Bounded:
    at most `MAX_DROP_INS` read, each at most 256 KiB; only paths systemd could load."""
    found = own_drop_in_paths(unit, reported) + waiting_drop_ins(transport, f"{unit}.service")
    chosen: dict[str, str] = {}
    for path in found:
        if len(chosen) >= LISTED_DROP_INS:
            break
        chosen.setdefault(path.rsplit("/", 1)[-1], path[:DROP_IN_PATH_CHARS])
    drops = []
    for n, path in enumerate(chosen.values()):
        if not readable_drop_in(unit, path):
            drops.append(
                DropIn(path, None, "not read: not this unit's drop-in in a unit directory")
            )
        elif n >= MAX_DROP_INS:
            drops.append(DropIn(path, None, f"not read: more than {MAX_DROP_INS} drop-ins"))
        else:
            try:
                data = transport.read_file(path, limit=MAX_UNIT_BYTES + 1, partial=True)
            except Exception as exc:  # not a regular file, unreadable: named, not read
                drops.append(DropIn(path, None, f"not read: {_reason(exc)[:300]}"))
                continue
            if data is None:
                continue  # gone since it was listed
            note = (
                "larger than 256 KiB: only its start was read" if len(data) > MAX_UNIT_BYTES else ""
            )
            drops.append(DropIn(path, data[:MAX_UNIT_BYTES], note))
    return drops


def _metrics(transport: Transport, target: Target, clock: Callable[[], float]) -> Sample:
    status, body = http_get(transport, target.base_url + "/metrics", target.api_key)
    at = clock()
    if status == 0:
        raise MetricsUnreadable(f"{target.base_url}/metrics did not answer: {body[-300:]}")
    if status != 200:
        raise MetricsUnreadable(f"{target.base_url}/metrics answered HTTP {status}")
    return parse(body, at)


__all__ = ["SSH", "HostRead", "Target", "UnitRead", "read_drop_ins", "read_host"]
