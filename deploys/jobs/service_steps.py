"""The service's own steps: vLLM check, stop, GPU-clean, start, early journal check,
readiness, and the benchmark hook.

Every wait is bounded by the profile's settings (`deploys.jobs.policy`) and every command
by the transport (SSH: `timeout(1)` on the host). Long waits poll in short ticks and
return early on cancel. The journal is followed from the cursor taken before the start
(`journalctl -o json --after-cursor`), and the unit's state is read on every tick, so a
crash at minute 20 of a 45-minute load is reported at minute 20.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from audit.models import AuditKind
from audit.services import record
from deploys.jobs import benchmark as benchmark_hook
from deploys.jobs.context import JobContext
from deploys.jobs.policy import START_COMMAND_S
from deploys.jobs.recorder import Recorder
from deploys.jobs.results import Found, Preflighted, Started, Stopped, Watched
from deploys.jobs.steps import StepResult
from deploys.models import DeployRequest
from hostops.channel import Transport
from hostops.channel.errors import CommandTimeout
from hostops.gpu_clean import clean_gpus, service_identity
from hostops.http_on_host import http_get
from hostops.journal import classify, entry_lines, last_progress, unit_verdict
from hostops.service import VllmService
from hostops.vllm_check import check_vllm_args

STATE_PROPERTIES = ("ActiveState", "SubState", "Result", "ExecMainStatus", "NRestarts", "MainPID")
JOURNAL_TICK_S = 0.5  # the early check: a fatal line shows within a second
READY_TICK_S = 1.0
STOPPED = ("inactive", "failed")
KEEP_JOURNAL_LINES = 200
JOURNAL_BATCH = 5000  # entries read per tick at most (a service logging faster is noted)


# --------------------------------------------------------------------------------------
# vLLM's own check (before anything is touched)


def vllm_check(ctx: JobContext, rec: Recorder, found: Preflighted) -> StepResult:
    """Parse the exact argv with the host's vLLM; a rejected argument or speculative
    config fails the job here, before production is stopped."""
    if found.service is None:
        return StepResult.skipped("the unit runs no vLLM server: nothing for vLLM to check")
    check = check_vllm_args(
        ctx.transport, found.service, dict(found.environment), unit_text=ctx.request.unit_text
    )
    rec.read("vllm_check", check.as_json())
    if check.ok is None:
        return StepResult.skipped(f"not checked with the host's vLLM: {check.reason}")
    where = f"vLLM {check.version} on {ctx.host.name} ({check.python})"
    if check.ok is False:
        return StepResult.failed(
            f"{where} rejects the unit's {check.stage}: {check.reason}; nothing was changed "
            "on the host",
            vllm=check.as_json(),
        )
    rec.log(f"{where} accepts the arguments" + (f"; {check.note}" if check.note else ""))
    return StepResult.success(vllm=check.as_json())


# --------------------------------------------------------------------------------------
# stop and GPU-clean


def stop(ctx: JobContext, rec: Recorder) -> StepResult:
    """`systemctl stop`, bounded (systemd's TimeoutStopSec= twice, for SIGTERM and the
    final SIGKILL, plus a margin), after reading who the service is: its processes are
    what GPU-clean may kill."""
    policy = ctx.policy
    identity = service_identity(ctx.transport, ctx.unit)
    rec.read("service", identity.as_json())
    visible = identity.visible_devices
    rec.log(
        f"{ctx.unit}: {len(identity.processes)} process(es) in its tree, user "
        f"{identity.user}, CUDA_VISIBLE_DEVICES={'unset' if visible is None else repr(visible)}"
    )
    rec.provide(Stopped(identity))  # from here on the service may have been touched
    try:
        done = ctx.transport.systemctl(
            "stop", "--", ctx.unit, check=False, timeout=policy.stop_timeout_s
        )
    except CommandTimeout:
        return StepResult.failed(
            f"systemctl stop {ctx.unit} did not return within {policy.stop_timeout_s:g} s",
            rollback=True,
        )
    if not done.ok:
        return StepResult.failed(
            f"systemctl stop {ctx.unit} exited {done.exit_code}: {done.stderr_text.strip()}",
            rollback=True,
        )
    state = _unit_state(ctx.transport, ctx.unit)
    rec.read("after_stop", state)
    if state.get("ActiveState") not in STOPPED:
        return StepResult.failed(
            f"{ctx.unit} is {state.get('ActiveState')}/{state.get('SubState')} after "
            "systemctl stop returned",
            rollback=True,
        )
    rec.log(f"{ctx.unit} is {state['ActiveState']} ({state.get('SubState')})")
    return StepResult.success(active_state=state["ActiveState"])


def gpu_clean(ctx: JobContext, rec: Recorder, stopped: Stopped) -> StepResult:
    """Every GPU the service will use clean (hostops.gpu_clean), or nothing starts."""
    identity = stopped.identity
    report = clean_gpus(
        ctx.transport,
        identity,
        ctx.policy.clean,
        log=rec.log,
        cancelled=ctx.cancel_requested,
    )
    rec.read("gpus", report.gpus)
    _audit_kills(ctx, report.kills)
    data = report.as_json()
    for key in ("gpus", "reason", "clean"):
        data.pop(key)
    if report.clean:
        return StepResult.success(**data)
    if ctx.cancel_requested():
        return StepResult.cancelled(report.reason, **data)
    return StepResult.failed(f"{report.reason}; {ctx.unit} was not started", rollback=True, **data)


def _audit_kills(ctx: JobContext, kills: list[dict[str, Any]]) -> None:
    """Each signal sent to a process is a host action: one audit event each."""
    if not kills:
        return
    with transaction.atomic():
        for kill in kills:
            record(
                kind=AuditKind.GPU_PROCESS_SIGNALLED,
                actor=None,
                obj=ctx.request,
                payload={"request": ctx.request.pk, "unit": ctx.unit, **kill},
                host_name=ctx.host.name,
                profile_name=ctx.request.profile_version.profile.name,
            )


# --------------------------------------------------------------------------------------
# start, journal, readiness


def start(ctx: JobContext, rec: Recorder) -> StepResult:
    """Remember the journal's position, then queue the start (`--no-block`: the next
    steps watch it, so a cancel or a crash is seen while ExecStartPre= still runs)."""
    cursor = rec.read("journal_cursor", journal_cursor(ctx.transport))
    before = _unit_state(ctx.transport, ctx.unit)
    restarts_at_start = _int(before.get("NRestarts"))
    done = ctx.transport.systemctl(
        "start", "--no-block", "--", ctx.unit, check=False, timeout=START_COMMAND_S
    )
    rec.provide(Started(cursor, started_at=time.monotonic(), restarts=restarts_at_start))
    if not done.ok:
        return StepResult.failed(
            f"systemctl start {ctx.unit} exited {done.exit_code}: {done.stderr_text.strip()}",
            rollback=True,
        )
    rec.log(f"start of {ctx.unit} queued; journal followed from {cursor or 'its start'}")
    return StepResult.success(cursor=cursor)


def journal_check(ctx: JobContext, rec: Recorder, started: Started, found: Found) -> StepResult:
    """Follow the journal for the profile's window; a fatal line or the unit failing
    ends the job at once with the offending lines. Ends early once /health answers."""
    window = ctx.policy.journal_check_s
    watch = _Watch(ctx, rec, found.service, started, cursor=started.cursor)
    return _watch(watch, seconds=window, tick=JOURNAL_TICK_S, ready=False)


def readiness(
    ctx: JobContext, rec: Recorder, started: Started, watched: Watched, found: Found
) -> StepResult:
    """/health, then /v1/models listing the served model name, within the profile's
    budget, watching the unit and the journal all along (from where the journal check
    left off)."""
    if watched.healthy:
        rec.log("ready already during the journal check")
        rec.provide(watched)
        return StepResult.success(ready_after_s=0)
    watch = _Watch(
        ctx, rec, found.service, started, watched.cursor, journal_lines=list(watched.journal_lines)
    )
    return _watch(watch, seconds=ctx.policy.ready_timeout_s, tick=READY_TICK_S, ready=True)


def benchmark(ctx: JobContext, rec: Recorder, found: Found) -> StepResult:
    """The benchmark hook (deploys.jobs.benchmark), for deploys only: a restart or a
    rollback brings back something already measured."""
    if ctx.kind != DeployRequest.Kind.DEPLOY:
        return StepResult.skipped(f"{ctx.request.get_kind_display().lower()}s are not benchmarked")
    return benchmark_hook.benchmark(benchmark_hook.BenchmarkJob(ctx, rec, found.service))


@dataclass
class _Watch:
    """One watch of a start, local to its step: where the journal is read from, its last
    lines, whether the server answered as ready; `seen()` is what the step provides."""

    ctx: JobContext
    rec: Recorder
    service: VllmService | None
    started: Started
    cursor: str
    journal_lines: list[str] = field(default_factory=list)
    healthy: bool = False

    def seen(self) -> Watched:
        return Watched(self.cursor, tuple(self.journal_lines), self.healthy)


def _watch(watch: _Watch, *, seconds: float, tick: float, ready: bool) -> StepResult:
    """The watch, providing what it saw however it ends (a failure too: the runner says
    whether the unit answered)."""
    try:
        return _watch_ticks(watch, seconds=seconds, tick=tick, ready=ready)
    finally:
        watch.rec.provide(watch.seen())


def _watch_ticks(watch: _Watch, *, seconds: float, tick: float, ready: bool) -> StepResult:
    """Each tick: the new journal lines, the unit's state, /health when it is active;
    the first of fatal line, failed unit, ready, cancel or the window's end decides."""
    ctx = watch.ctx
    deadline = time.monotonic() + seconds
    since_start = watch.started.started_at or time.monotonic()
    cursor = watch.cursor
    while True:
        lines, cursor = _follow_journal(watch, cursor)
        elapsed = time.monotonic() - since_start
        fatal = classify(lines)
        if fatal is not None:
            watch.cursor = cursor
            return _start_failed(
                watch.rec,
                f"{fatal.summary} ({elapsed:.1f} s after the start)",
                list(fatal.lines),
                kind=fatal.kind,
            )
        state = _unit_state(ctx.transport, ctx.unit)
        verdict = unit_verdict(state, watch.started.restarts)
        if verdict:
            return _unit_gave_up(watch, state, verdict, cursor, elapsed)
        watch.cursor = cursor
        result, stage = _check_active(watch, state, elapsed)
        if result is not None:
            return result
        _show_progress(watch, elapsed, stage)
        if ctx.cancel_requested():
            return StepResult.cancelled(
                f"cancelled {elapsed:.0f} s after the start, while {stage}",
                elapsed_s=round(elapsed, 3),
            )
        now = time.monotonic()
        if now >= deadline:
            return _window_over(watch, seconds, stage, ready=ready)
        time.sleep(min(tick, deadline - now))


def _follow_journal(watch: _Watch, cursor: str) -> tuple[list[str], str]:
    """The unit's journal lines after `cursor` (kept in the watch's tail), and the
    cursor to read on from."""
    ctx = watch.ctx
    entries = ctx.transport.journal(ctx.unit, since=cursor or None, lines=JOURNAL_BATCH)
    if entries:
        cursor = entries[-1].cursor or cursor
    lines = entry_lines(entries)
    watch.journal_lines = (watch.journal_lines + lines)[-KEEP_JOURNAL_LINES:]
    return lines, cursor


def _unit_gave_up(
    watch: _Watch, state: dict[str, str], verdict: str, cursor: str, elapsed: float
) -> StepResult:
    """The unit failed (or systemd restarts it): the failure, with the fatal journal
    lines when there are any, else the journal's last lines."""
    ctx, rec = watch.ctx, watch.rec
    rec.read("unit_state", state)
    # What it printed on the way out may reach the journal a moment after.
    late = ctx.transport.journal(ctx.unit, since=cursor or None, lines=JOURNAL_BATCH)
    watch.cursor = late[-1].cursor if late else cursor
    watch.journal_lines = (watch.journal_lines + entry_lines(late))[-KEEP_JOURNAL_LINES:]
    fatal = classify(watch.journal_lines)
    if fatal is not None:
        return _start_failed(
            rec,
            f"{fatal.summary}; {verdict} ({elapsed:.1f} s after the start)",
            list(fatal.lines),
            kind=fatal.kind,
        )
    return _start_failed(
        rec, f"{verdict} ({elapsed:.1f} s after the start)", watch.journal_lines[-20:]
    )


def _check_active(
    watch: _Watch, state: dict[str, str], elapsed: float
) -> tuple[StepResult | None, str]:
    """Success once the unit is active and its vLLM server ready (or there is no server
    to ask); otherwise None and what is being waited for."""
    ctx, rec, service = watch.ctx, watch.rec, watch.service
    if state.get("ActiveState") != "active":
        return None, f"{ctx.unit} {state.get('ActiveState')}/{state.get('SubState')}"
    if service is None:
        rec.log(f"{ctx.unit} is active (no vLLM server to ask) after {elapsed:.1f} s")
        return StepResult.success(ready_after_s=round(elapsed, 3)), ""
    answer = _readiness_probe(ctx, service)
    if answer != "ready":
        return None, answer
    watch.healthy = True
    rec.read("journal_tail", watch.journal_lines[-20:])
    rec.log(
        f"{service.base_url} answers /health and lists "
        f"{service.served_model_name!r} after {elapsed:.1f} s"
    )
    return StepResult.success(ready_after_s=round(elapsed, 3)), ""


def _show_progress(watch: _Watch, elapsed: float, stage: str) -> None:
    shown = last_progress(watch.journal_lines) or (watch.journal_lines or [""])[-1]
    watch.rec.progress(f"{elapsed:.0f} s: {stage}" + (f" — {shown.strip()[:200]}" if shown else ""))


def _window_over(watch: _Watch, seconds: float, stage: str, *, ready: bool) -> StepResult:
    """The end of the watch: the journal check passed; readiness did not come."""
    watch.rec.read("journal_tail", watch.journal_lines[-20:])
    if not ready:
        watch.rec.log(f"nothing fatal in the journal within {seconds:g} s ({stage})")
        return StepResult.success(window_s=seconds)
    return StepResult.failed(
        f"not ready after {seconds:g} s ({stage}); last journal line: "
        f"{(watch.journal_lines or ['(none)'])[-1].strip()[:300]}",
        rollback=True,
    )


def _start_failed(rec: Recorder, reason: str, lines: list[str], kind: str = "") -> StepResult:
    rec.read("offending_lines", lines)
    for line in lines:
        rec.log(f"| {line}")
    return StepResult.failed(reason, rollback=True, lines=lines, fatal=kind)


def _readiness_probe(ctx: JobContext, service: VllmService) -> str:
    """ "ready", or what is being waited for."""
    status, _ = http_get(ctx.transport, service.base_url + "/health")
    if status != 200:
        return "waiting for /health" + (f" (HTTP {status})" if status else "")
    status, body = http_get(ctx.transport, service.base_url + "/v1/models", service.api_key)
    if status != 200:
        return f"/health answers; /v1/models gives HTTP {status}"
    try:
        names = [m.get("id") for m in json.loads(body).get("data", [])]
    except (ValueError, AttributeError):
        return "/v1/models answered something that is not JSON"
    if service.served_model_name not in names:
        return f"/v1/models lists {names}, not {service.served_model_name!r}"
    return "ready"


# --------------------------------------------------------------------------------------
# host-side helpers


def journal_cursor(transport: Transport) -> str:
    """The cursor of the journal's newest entry ("" when the journal is empty)."""
    argv = ["journalctl", "--no-pager", "-q", "-n", "1", "-o", "json", "--output-fields=MESSAGE"]
    result = transport.run(argv, timeout=30)
    for line in reversed(result.stdout_text.splitlines()):
        try:
            return str(json.loads(line).get("__CURSOR", ""))
        except ValueError:
            continue
    return ""


def _unit_state(transport: Transport, unit: str) -> dict[str, str]:
    return transport.unit_properties(unit, STATE_PROPERTIES)


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


__all__ = [
    "benchmark",
    "gpu_clean",
    "journal_check",
    "journal_cursor",
    "readiness",
    "start",
    "stop",
    "vllm_check",
]
