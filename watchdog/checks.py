"""The checks: small pure functions from what was read on a host to verdicts.

Each check judges one *scope* ("unit:vllm-a", "gpus", …) and returns the findings it saw
there. The services (`watchdog.services`) open an incident per new finding and close the
open incidents of a judged scope that it no longer finds; a scope whose reading failed
is not judged at all, so nothing closes on a failed read (the `unreachable` verdict says
why instead). What each check looks at and why: docs/watchdog.md.
"""

from __future__ import annotations

import difflib
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hostops.channel.base import GpuInfo
from hostops.channel.push import sha256_hex
from hostops.gpu_clean import (
    ESCAPED,
    ServiceIdentity,
    attribute,
    format_gpus,
    format_mib,
    needed_gpus,
)
from hostops.gpu_clean import holders as gpu_holders
from hostops.gpu_free import DEFAULT_THRESHOLD_MIB, gpu_is_free
from hostops.processes import ProcessInfo
from hostops.unit_paths import is_drop_in_path
from watchdog.canary import CanaryResult
from watchdog.metrics import Sample

UNIT_FAILED = "unit_failed"
RESTART_LOOP = "restart_loop"
DRIFT = "drift"
GPU_LEFTOVER = "gpu_leftover"
GPU_FOREIGN = "gpu_foreign"
HUNG_ENGINE = "hung_engine"
ACCEPTANCE_COLLAPSE = "acceptance_collapse"
UNREACHABLE = "unreachable"

DIFF_CHARS = 8000  # evidence stays small: a unit file's diff, not a log
CANARY_BODY_CHARS = 2000
DROP_IN_CHARS = 4000  # of a drop-in's text kept as evidence
MAX_DROP_INS = 20  # read per unit; more are named by path only
DEFAULT_LOOP_WINDOW_S = 300.0
DEFAULT_LOOP_RESTARTS = 3
DEFAULT_HUNG_WINDOW_S = 60.0
DEFAULT_ACCEPTANCE_WINDOW_S = 300.0
DEFAULT_MIN_DRAFT_TOKENS = 500
DEFAULT_COLLAPSE_RATIO = 0.5  # below half the benchmarked acceptance rate


@dataclass(frozen=True)
class Finding:
    kind: str
    subject: str  # what it is about within the scope ("pid 4242", "" for the scope itself)
    summary: str
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """What one check concluded about one scope. `judged` False: it could not tell (too
    little traffic to measure): its open incidents stay as they are. `recheck_at`: the
    wall-clock time (the samples' clock) at which a reading could decide what this one
    could not yet (a stall short of its window); the runner checks the host again then
    when that comes before its period (docs/watchdog.md "Scheduling and claims")."""

    scope: str
    unit: str = ""
    findings: tuple[Finding, ...] = ()
    judged: bool = True
    recheck_at: float | None = None


# -- 1. the unit ------------------------------------------------------------------------------


@dataclass(frozen=True)
class UnitState:
    """`systemctl show` of the unit: the properties `UNIT_PROPERTIES` names."""

    unit: str
    load_state: str
    active_state: str
    sub_state: str
    result: str
    n_restarts: int
    main_pid: int
    control_group: str = ""
    user: str = ""
    environment: str = ""
    drop_in_paths: str = ""  # systemd's DropInPaths: space-separated, in its order

    @property
    def running(self) -> bool:
        return self.active_state in ("active", "reloading")

    def as_json(self) -> dict[str, Any]:
        return {
            "load": self.load_state,
            "active": self.active_state,
            "sub": self.sub_state,
            "result": self.result,
            "restarts": self.n_restarts,
            "main_pid": self.main_pid,
        }


UNIT_PROPERTIES = (
    "LoadState",
    "ActiveState",
    "SubState",
    "Result",
    "NRestarts",
    "MainPID",
    "ControlGroup",
    "User",
    "Environment",
    "DropInPaths",
)


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


def unit_state(unit: str, props: dict[str, str]) -> UnitState:
    return UnitState(
        unit=unit,
        load_state=props.get("LoadState", ""),
        active_state=props.get("ActiveState", ""),
        sub_state=props.get("SubState", ""),
        result=props.get("Result", ""),
        n_restarts=_int(props.get("NRestarts")),
        main_pid=_int(props.get("MainPID")),
        control_group=props.get("ControlGroup", ""),
        user=props.get("User", ""),
        environment=props.get("Environment", ""),
        drop_in_paths=props.get("DropInPaths", ""),
    )


def check_unit(
    state: UnitState,
    restarts: Sequence[tuple[float, int]],
    *,
    loop_window_s: float = DEFAULT_LOOP_WINDOW_S,
    loop_restarts: int = DEFAULT_LOOP_RESTARTS,
) -> Verdict:
    """Failed, stopped or not loaded → unit_failed; systemd restarting it (`auto-restart`)
    or `NRestarts` grown by `loop_restarts` within the window → restart_loop.
    `restarts`: (time, NRestarts) readings, oldest first, this one last."""
    findings = []
    evidence = state.as_json()
    name = f"{state.unit}.service"
    if state.load_state == "not-found":
        findings.append(Finding(UNIT_FAILED, "", f"{name} is not loaded (no unit file)", evidence))
    elif state.active_state == "failed":
        why = f" (result {state.result})" if state.result and state.result != "success" else ""
        findings.append(Finding(UNIT_FAILED, "", f"{name} failed{why}", evidence))
    elif state.active_state in ("inactive", "deactivating"):
        findings.append(
            Finding(UNIT_FAILED, "", f"{name} is not running ({state.active_state})", evidence)
        )
    grown = _restarts_within(restarts, loop_window_s)
    if state.sub_state == "auto-restart" or grown >= loop_restarts:
        findings.append(
            Finding(
                RESTART_LOOP,
                "",
                f"{name} restarts in a loop: {grown} restarts in the last "
                f"{loop_window_s:g} s (NRestarts {state.n_restarts}, {state.sub_state})",
                {**evidence, "restarts_in_window": grown},
            )
        )
    return Verdict(f"unit:{state.unit}", state.unit, tuple(findings))


def _restarts_within(restarts: Sequence[tuple[float, int]], window_s: float) -> int:
    if not restarts:
        return 0
    now, latest = restarts[-1]
    inside = [n for at, n in restarts if at >= now - window_s]
    earliest = inside[0] if inside else latest
    return max(0, latest - earliest) if latest >= earliest else latest  # a reset: count anew


# -- 2. drift ---------------------------------------------------------------------------------


def bounded_diff(approved: str, on_host: str, unit: str, limit: int = DIFF_CHARS) -> str:
    lines = difflib.unified_diff(
        approved.splitlines(keepends=True),
        on_host.splitlines(keepends=True),
        fromfile=f"{unit}.service (approved)",
        tofile=f"{unit}.service (on the host)",
    )
    text = "".join(lines)
    if len(text) > limit:
        text = text[:limit] + f"\n… ({len(text) - limit:,} more characters not kept)\n"
    return text


def check_drift(unit: str, approved_text: str, on_host: bytes | None) -> Verdict:
    """The unit file on the host against the text specadmin last pushed (approved)."""
    approved_sha = sha256_hex(approved_text.encode("utf-8"))
    if on_host is None:
        finding = Finding(
            DRIFT,
            "",
            f"{unit}.service was removed on the host outside specadmin",
            {"approved_sha256": approved_sha, "host_sha256": "", "diff": ""},
        )
        return Verdict(f"drift:{unit}", unit, (finding,))
    host_sha = sha256_hex(on_host)
    if host_sha == approved_sha:
        return Verdict(f"drift:{unit}", unit)
    text = on_host.decode("utf-8", errors="replace")
    finding = Finding(
        DRIFT,
        "",
        f"{unit}.service on the host is not the approved text "
        f"(sha256 {host_sha[:12]}…, approved {approved_sha[:12]}…)",
        {
            "approved_sha256": approved_sha,
            "host_sha256": host_sha,
            "diff": bounded_diff(approved_text, text, unit),
        },
    )
    return Verdict(f"drift:{unit}", unit, (finding,))


@dataclass(frozen=True)
class DropIn:
    """One drop-in systemd applies to the unit, as read on the host (`data` None: not
    read, `note` says why)."""

    path: str
    data: bytes | None
    note: str = ""


def own_drop_in_paths(unit: str, reported: str) -> list[str]:
    """The unit's own drop-ins (`NAME.service.d/*.conf`) among systemd's DropInPaths, in
    its order. Directory-wide ones (`service.d/`, prefix drop-ins such as
    `vllm-.service.d/`) belong to the host, as `deploys.existing_units` treats them."""
    own = f"{unit}.service.d"
    return [p for p in reported.split() if posixpath.basename(posixpath.dirname(p)) == own]


def readable_drop_in(unit: str, path: str) -> bool:
    """A path systemd could load as this unit's drop-in (`hostops.unit_paths`). A host
    naming anything else is not read (it could name any file)."""
    return is_drop_in_path(path, f"{unit}.service")


def check_drop_ins(unit: str, approved: Mapping[str, str], on_host: Sequence[DropIn]) -> Verdict:
    """Each drop-in of the unit on the host against those the approved deploy was made
    with (path → sha256: drop-ins an admin adopted, `deploys.existing_units`). A drop-in
    changes what runs though the unit file does not (systemd.unit(5), "drop-in"): one
    added, or edited since, is drift."""
    findings = []
    for drop in on_host:
        sha = sha256_hex(drop.data) if drop.data is not None else ""
        expected = approved.get(drop.path)
        if expected is not None and sha == expected:
            continue
        text = (drop.data or b"").decode("utf-8", errors="replace").replace("\0", "\ufffd")
        if len(text) > DROP_IN_CHARS:
            text = text[:DROP_IN_CHARS] + f"\n… ({len(text) - DROP_IN_CHARS:,} more characters)\n"
        how = (
            "edited since the deploy was approved with it"
            if expected is not None
            else "not deployed by specadmin"
        )
        evidence: dict[str, Any] = {
            "path": drop.path,
            "sha256": sha,
            "size": len(drop.data) if drop.data is not None else None,
            "text": text,
            "note": drop.note,
        }
        if expected is not None:
            evidence["approved_sha256"] = expected
        findings.append(
            Finding(
                DRIFT,
                f"drop-in {drop.path}",
                f"{unit}.service on the host runs with the drop-in {drop.path}, {how}",
                evidence,
            )
        )
    return Verdict(f"dropins:{unit}", unit, tuple(findings))


# -- 3. GPUs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Watched:
    """A service the GPU check attributes processes to: who it is and whether it runs."""

    identity: ServiceIdentity
    running: bool

    @property
    def name(self) -> str:
        return self.identity.unit.removesuffix(".service")


def service_of(state: UnitState, env: dict[str, str]) -> Watched:
    unit = f"{state.unit}.service"
    return Watched(
        ServiceIdentity(
            unit=unit,
            cgroup=state.control_group or f"/system.slice/{unit}",
            user=state.user or "root",
            visible_devices=env.get("CUDA_VISIBLE_DEVICES"),
            device_order=env.get("CUDA_DEVICE_ORDER"),
        ),
        state.running,
    )


def check_gpus(
    gpus: Sequence[GpuInfo],
    infos: dict[int, ProcessInfo],
    services: Sequence[Watched],
    *,
    threshold_mib: int = DEFAULT_THRESHOLD_MIB,
) -> Verdict:
    """Every process with GPU memory attributed (`hostops.gpu_clean.attribute`): in a
    service's cgroup while it runs is the service; in its cgroup while it is stopped, or
    escaped from it (its user, a vLLM title, in init.scope) → gpu_leftover; anyone else's
    on a GPU a watched service uses → gpu_foreign. A GPU that a stopped service uses with
    memory above the GPU-free threshold and no process listed → gpu_leftover too."""
    needed = {
        w.name: {g.index for g in needed_gpus(gpus, w.identity.visible_devices)[0]}
        for w in services
    }
    findings: list[Finding] = []
    for holder in gpu_holders(gpus, infos, ServiceIdentity()):
        info = infos.get(holder.pid)
        owner, why = _owner(info, holder.gpus, services, needed)
        evidence = {
            "pid": holder.pid,
            "name": holder.name,
            "user": holder.user,
            "gpus": list(holder.gpus),
            "mib": holder.mib,
            "why": why,
            "cgroup": info.cgroup if info else "",
        }
        held = f"PID {holder.pid} ({holder.name}, user {holder.user}) holds " + (
            f"{format_mib(holder.mib)} on {format_gpus(holder.gpus)}"
        )
        if owner is not None:
            if owner.running and not why.startswith(ESCAPED):
                continue  # the service itself
            state = "running" if owner.running else "stopped"
            findings.append(
                Finding(
                    GPU_LEFTOVER,
                    f"{owner.name}:pid {holder.pid}",
                    f"{held}: a leftover of {owner.identity.unit} ({why}) while it is {state}",
                    {**evidence, "unit": owner.name},
                )
            )
            continue
        users = sorted(n for n, idx in needed.items() if idx & set(holder.gpus))
        if users:
            findings.append(
                Finding(
                    GPU_FOREIGN,
                    f"pid {holder.pid}",
                    f"{held}, GPUs {', '.join(users)} uses ({why})",
                    {**evidence, "units": users},
                )
            )
    listed = {g.index for g in gpus if g.processes}
    for w in services:
        if w.running:
            continue
        for g in gpus:
            if g.index not in needed[w.name] or g.index in listed:
                continue
            if not gpu_is_free(g.memory_used_mib, 0, threshold_mib):
                findings.append(
                    Finding(
                        GPU_LEFTOVER,
                        f"{w.name}:gpu {g.index}",
                        f"GPU {g.index} has {g.memory_used_mib:,} MiB used with no process "
                        f"listed while {w.identity.unit} is stopped (threshold "
                        f"{threshold_mib:,} MiB)",
                        {"gpu": g.index, "mib": g.memory_used_mib, "unit": w.name},
                    )
                )
    return Verdict("gpus", "", tuple(findings))


def _owner(
    info: ProcessInfo | None,
    on_gpus: tuple[int, ...],
    services: Sequence[Watched],
    needed: dict[str, set[int]],
) -> tuple[Watched | None, str]:
    """The watched service a GPU process belongs to (its cgroup first, then an escape on a
    GPU that service uses: elsewhere it may be another service's), and why."""
    last_why = "not a watched service's"
    for w in services:
        ours, why = attribute(info, w.identity)
        if ours and not why.startswith(ESCAPED):
            return w, why
        last_why = why if not ours else last_why
    for w in services:
        ours, why = attribute(info, w.identity)
        if ours and needed[w.name] & set(on_gpus):
            return w, why
    return None, last_why


# -- 4. a hung engine -------------------------------------------------------------------------


def check_hung(
    unit: str, samples: Sequence[Sample], *, window_s: float = DEFAULT_HUNG_WINDOW_S
) -> Verdict:
    """Requests running while the generation counter has not moved for `window_s`: an
    engine that still answers /health but makes no progress. `samples`: oldest first.

    The stall is counted from the first sample that showed the counter's present value,
    the only time it is known to have stopped by. With requests running and the window
    not yet reached, the verdict asks for a reading when it is (`recheck_at`): waiting
    for the next period instead would find a stall up to a period late whenever the
    checks' lags differ, because that sample itself came up to a period after the last
    token."""
    scope = f"engine:{unit}"
    if not samples:
        return Verdict(scope, unit, judged=False)
    latest = samples[-1]
    earliest = latest
    for sample in reversed(samples):
        if sample.running <= 0 or sample.generated != latest.generated:
            break
        earliest = sample
    stuck_s = latest.at - earliest.at
    decided_at = earliest.at + window_s  # a reading then decides: the same sum both ways
    if latest.running > 0 and latest.at >= decided_at:
        finding = Finding(
            HUNG_ENGINE,
            "",
            f"{unit}: {latest.running:g} requests running and no token generated for "
            f"{stuck_s:.0f} s (vllm:generation_tokens_total stays {latest.generated:g})",
            {
                "running": latest.running,
                "waiting": latest.waiting,
                "generation_tokens_total": latest.generated,
                "stuck_s": round(stuck_s, 1),
                "window_s": window_s,
            },
        )
        return Verdict(scope, unit, (finding,))
    if latest.running > 0:
        return Verdict(scope, unit, recheck_at=decided_at)
    return Verdict(scope, unit)


def check_canary(unit: str, result: CanaryResult) -> Verdict:
    """/health answers 200 but the one-token request (watchdog.canary) times out or
    errors → hung_engine. A server whose /health does not answer 200 was not asked: not
    judged here (it is starting, or the unit check sees it)."""
    scope = f"canary:{unit}"
    if result.status is None:
        return Verdict(scope, unit, judged=False)
    if result.answered:
        return Verdict(scope, unit)
    if result.status == 0 and "timed out" in result.error:
        what = f"gave no token within {result.deadline_s:g} s"
    elif result.status:
        what = f"failed: HTTP {result.status}" + (f" ({result.error})" if result.error else "")
    else:
        what = f"failed: {result.error[:200]}"
    finding = Finding(
        HUNG_ENGINE,
        "canary",
        f"{unit}: /health answers 200 but a one-token request (POST /v1/completions, "
        f"max_tokens 1) {what}",
        {
            "health": result.health,
            "status": result.status,
            "seconds": result.seconds,
            "deadline_s": result.deadline_s,
            "error": result.error[:CANARY_BODY_CHARS],
            "body": result.body[-CANARY_BODY_CHARS:],
        },
    )
    return Verdict(scope, unit, (finding,))


# -- 5. speculative acceptance ----------------------------------------------------------------


def acceptance_over(samples: Sequence[Sample], window_s: float) -> tuple[float, float] | None:
    """(accepted, draft tokens) over the last `window_s`; None without spec counters or
    across a counter reset."""
    if not samples or samples[-1].draft_tokens is None or samples[-1].accepted is None:
        return None
    latest = samples[-1]
    inside = [s for s in samples if s.at >= latest.at - window_s and s.draft_tokens is not None]
    first = inside[0]
    assert latest.draft_tokens is not None and latest.accepted is not None
    if first.draft_tokens is None or first.accepted is None:
        return None
    drafted = latest.draft_tokens - first.draft_tokens
    accepted = latest.accepted - first.accepted
    if drafted < 0 or accepted < 0:
        return None
    return accepted, drafted


def check_acceptance(
    unit: str,
    samples: Sequence[Sample],
    expected_percent: float | None,
    *,
    window_s: float = DEFAULT_ACCEPTANCE_WINDOW_S,
    min_draft_tokens: int = DEFAULT_MIN_DRAFT_TOKENS,
    ratio: float = DEFAULT_COLLAPSE_RATIO,
) -> Verdict:
    """The acceptance rate on live traffic (accepted / draft tokens over the window)
    against the rate the benchmark recorded; below `ratio` of it → acceptance_collapse.
    Too little drafting in the window to tell: not judged."""
    scope = f"acceptance:{unit}"
    if expected_percent is None or expected_percent <= 0:
        return Verdict(scope, unit)  # nothing to compare with: nothing to report
    measured = acceptance_over(samples, window_s)
    if measured is None or measured[1] < min_draft_tokens:
        return Verdict(scope, unit, judged=False)
    accepted, drafted = measured
    rate = accepted / drafted * 100
    if rate >= expected_percent * ratio:
        return Verdict(scope, unit)
    finding = Finding(
        ACCEPTANCE_COLLAPSE,
        "",
        f"{unit}: speculative acceptance {rate:.1f}% over the last {window_s:g} s, against "
        f"{expected_percent:.1f}% when benchmarked",
        {
            "rate_percent": round(rate, 2),
            "expected_percent": round(expected_percent, 2),
            "accepted": accepted,
            "draft_tokens": drafted,
            "window_s": window_s,
        },
    )
    return Verdict(scope, unit, (finding,))


# -- failed readings --------------------------------------------------------------------------


def check_reach(errors: dict[str, str]) -> Verdict:
    """Every reading that failed, by what it was ("ssh", "unit:vllm-a", "metrics:vllm-a"):
    an unreachable incident each, never a healthy verdict for what it would have shown."""
    findings = tuple(
        Finding(UNREACHABLE, what, f"{what}: {reason}"[:500], {"reason": reason[:2000]})
        for what, reason in sorted(errors.items())
    )
    return Verdict("reach", "", findings)


__all__ = [
    "UNIT_PROPERTIES",
    "DropIn",
    "Finding",
    "UnitState",
    "Verdict",
    "Watched",
    "bounded_diff",
    "check_acceptance",
    "check_canary",
    "check_drift",
    "check_drop_ins",
    "check_gpus",
    "check_hung",
    "check_reach",
    "check_unit",
    "own_drop_in_paths",
    "readable_drop_in",
    "service_of",
    "unit_state",
]
