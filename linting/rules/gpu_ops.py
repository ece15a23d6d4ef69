"""OP: how a GPU service behaves when systemd starts, stops and restarts it."""

from __future__ import annotations

import re
from collections.abc import Iterator

from linting.context import Command, UnitContext, VllmCommand, shell_script
from linting.execline.waitloops import estimate_script
from linting.findings import Finding, Severity
from linting.rules.registry import register
from linting.spans import Span, Traced, join
from linting.systemd.values import USEC_INFINITY, USEC_PER_SEC, ValueProblem, parse_time

DEFAULT_TIMEOUT_SEC = 90.0  # DefaultTimeoutStartSec= / DefaultTimeoutStopSec= (systemd-system.conf)
MIN_STOP_TIMEOUT_SEC = 30.0


def vllm_commands(ctx: UnitContext) -> list[VllmCommand]:
    """The unit's vLLM servers (their ExecStart= commands)."""
    return [vc for vc in ctx.vllm_commands if vc.command.key == "ExecStart"]


def _seconds(ctx: UnitContext, *keys: str) -> tuple[float | None, Span | None]:
    """The timeout in effect from the last of `keys` (later keys override earlier ones in
    file order); (None, span) for "infinity"/0, (default, None) when unset or invalid.

    An assignment systemd cannot parse is ignored and the one before it stays in force; an
    empty value is no reset for these keys (parse_sec_fix_0() and parse_sec() refuse "")."""
    found = [a for a in ctx.unit.assignments if a.section == "Service" and a.name in keys]
    for a in reversed(found):
        parsed = parse_time(a.value.text)
        if isinstance(parsed, ValueProblem):
            continue
        if parsed in (0, USEC_INFINITY):
            return None, a.value.span()
        return parsed / USEC_PER_SEC, a.value.span()
    return DEFAULT_TIMEOUT_SEC, None


def _fmt(seconds: float) -> str:
    if seconds >= 120 and seconds % 60 == 0:
        return f"{int(seconds // 60)} min"
    return f"{seconds:g} s"


@register(
    "OP401",
    "notify-type-with-vllm",
    Severity.ERROR,
    doc="""
    `Type=notify` for a vLLM server, which never sends `READY=1`.

    What it does:
    Reports `Type=notify` / `Type=notify-reload` on units whose `ExecStart=` runs vLLM.

    Why is this bad?
    systemd waits for an sd_notify `READY=1` that vLLM never sends, so the start "hangs"
    until `TimeoutStartSec=` and systemd then kills the server (systemd.service(5), Type=).

    Example:
    ```ini
    Type=notify
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```

    Use instead:
    ```ini
    Type=exec
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```
    and check readiness with `/health` (specadmin's deploy job does).
    """,
)
def check_notify(ctx: UnitContext) -> Iterator[Finding]:
    type_ = ctx.unit.last("Service", "Type")
    if type_ is None or type_.value.text not in ("notify", "notify-reload"):
        return iter(())
    if not vllm_commands(ctx):
        return iter(())
    timeout, _ = _seconds(ctx, "TimeoutSec", "TimeoutStartSec")
    after = f"after TimeoutStartSec ({_fmt(timeout)})" if timeout else "never (no start timeout)"
    ctx.add(
        "OP401",
        type_.value.span(),
        f"Type={type_.value.text}: vLLM never sends READY=1, so the start never completes and "
        f"systemd kills the server {after}; use Type=exec or Type=simple",
        path=type_.path,
    )
    return iter(())


@register(
    "OP402",
    "kill-mode-leaves-gpu-workers",
    Severity.WARNING,
    doc="""
    `KillMode=process` or `none` lets vLLM's workers outlive a stop.

    What it does:
    Reports `KillMode=process|none` on vLLM units.

    Why is this bad?
    With these modes systemd signals only the main process (or nothing). vLLM's
    EngineCore and tensor-parallel worker processes (`VLLM::EngineCore`, `VLLM::Worker`)
    can survive holding GPU memory, so the next start fails with out-of-memory and someone
    has to find and kill them by hand (`pkill -f vllm` misses them).

    Example:
    ```ini
    KillMode=process
    ```

    Use instead:
    ```ini
    KillMode=control-group
    ```
    (the default: every process of the unit is stopped).
    """,
)
def check_kill_mode(ctx: UnitContext) -> Iterator[Finding]:
    mode = ctx.unit.last("Service", "KillMode")
    if mode is None or mode.value.text not in ("process", "none") or not vllm_commands(ctx):
        return iter(())
    ctx.add(
        "OP402",
        mode.value.span(),
        f"KillMode={mode.value.text}: on stop, vLLM's EngineCore/worker processes can survive "
        "and keep their GPU memory; use KillMode=control-group (the default)",
        path=mode.path,
    )
    return iter(())


@register(
    "OP403",
    "wait-loop-exceeds-start-timeout",
    Severity.ERROR,
    doc="""
    A wait loop in `ExecStartPre=` that can run longer than `TimeoutStartSec=`.

    What it does:
    Estimates the worst case of loops in `bash -c` scripts of `ExecStartPre=` and
    `ExecStartPost=` (iterations × sleeps) and compares it with `TimeoutStartSec=` (or
    `TimeoutSec=`, default 90 s), which bounds each of these commands separately. A loop
    with no bound at all is reported as a warning.

    Why is this bad?
    When the loop is still waiting, systemd kills it at the timeout and the whole start
    fails ("start-pre operation timed out"), even though the loop would have succeeded a
    little later.

    Example:
    ```ini
    ExecStartPre=/bin/bash -c 'for i in $(seq 1 60); do nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -q . || exit 0; sleep 5; done; exit 1'
    ```

    Use instead:
    ```ini
    TimeoutStartSec=45min
    ExecStartPre=/bin/bash -c 'for i in $(seq 1 60); do nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -q . || exit 0; sleep 5; done; exit 1'
    ```
    """,
)
def check_wait_loops(ctx: UnitContext) -> Iterator[Finding]:
    timeout, timeout_span = _seconds(ctx, "TimeoutSec", "TimeoutStartSec")
    for cmd in ctx.commands:
        if cmd.key not in ("ExecStartPre", "ExecStartPost"):
            continue
        found = shell_script(cmd)
        if found is None:
            continue
        script = found[1].value
        worst, loops = estimate_script(script.text)
        if not loops:
            continue
        span = cmd.assignment.value.span()
        where = "TimeoutStartSec=" + (_fmt(timeout) if timeout else "infinity")
        if timeout_span is None and timeout:
            where += " (the default)"
        if worst is None:
            if timeout is None:
                continue
            ctx.add(
                "OP403",
                span,
                f"this {cmd.key} wait loop has no bound: systemd kills it after {where} and "
                "the start fails; bound the loop and raise TimeoutStartSec= to cover it",
                path=cmd.assignment.path,
                severity=Severity.WARNING,
            )
            continue
        if timeout is not None and worst > timeout:
            detail = "; ".join(
                f"{loop.iterations} × {loop.sleep_per_iteration:g} s"
                for loop in loops
                if loop.iterations is not None and loop.sleep_per_iteration
            )
            ctx.add(
                "OP403",
                span,
                f"worst case of this {cmd.key} is at least {_fmt(worst)} ({detail}), more than "
                f"{where}: systemd kills it and the start fails; set TimeoutStartSec= above "
                f"{_fmt(worst)} or shorten the loop",
                path=cmd.assignment.path,
                data={"worst_case_seconds": worst, "timeout_seconds": timeout},
            )
    return iter(())


@register(
    "OP404",
    "no-restart-policy",
    Severity.WARNING,
    doc="""
    A vLLM service without a `Restart=` policy.

    What it does:
    Reports vLLM units with no `Restart=` or `Restart=no`.

    Why is this bad?
    A crash (CUDA error, OOM, NCCL timeout) leaves the endpoint down until someone
    notices. `Restart=on-failure` brings it back; pair it with `RestartSec=` so a model
    that fails to load is not restarted in a tight loop.

    Example:
    ```ini
    [Service]
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```

    Use instead:
    ```ini
    [Service]
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    Restart=on-failure
    RestartSec=30s
    ```
    """,
)
def check_restart(ctx: UnitContext) -> Iterator[Finding]:
    if not vllm_commands(ctx):
        return iter(())
    restart = ctx.unit.last("Service", "Restart")
    if restart is not None and restart.value.text not in ("", "no"):
        return iter(())
    if restart is None:
        span, path = ctx.unit.anchor("Service")
    else:
        span, path = restart.value.span(fallback=restart.key.span()), restart.path
    ctx.add(
        "OP404",
        span,
        "no Restart= policy: if vLLM crashes the endpoint stays down; add "
        "Restart=on-failure with RestartSec=",
        path=path,
    )
    return iter(())


@register(
    "OP405",
    "stop-timeout-too-short",
    Severity.WARNING,
    doc="""
    `TimeoutStopSec=` too short for a GPU server to exit cleanly.

    What it does:
    Reports vLLM units whose stop timeout (`TimeoutStopSec=` or `TimeoutSec=`) is below
    30 s.

    Why is this bad?
    vLLM needs time to drain requests, stop its EngineCore and workers and release GPU
    memory. systemd sends SIGKILL after the timeout; killed workers in the middle of a
    CUDA call can leave memory held until the driver reclaims it, and the next start then
    fails its GPU-free check.

    Example:
    ```ini
    TimeoutStopSec=5s
    ```

    Use instead:
    ```ini
    TimeoutStopSec=120s
    ```
    """,
)
def check_stop_timeout(ctx: UnitContext) -> Iterator[Finding]:
    if not vllm_commands(ctx):
        return iter(())
    timeout, span = _seconds(ctx, "TimeoutSec", "TimeoutStopSec")
    if span is None or timeout is None or timeout >= MIN_STOP_TIMEOUT_SEC:
        return iter(())
    # the file the setting came from (a drop-in, maybe)
    path = next(
        a.path
        for a in reversed(ctx.unit.assignments)
        if a.section == "Service"
        and a.name in ("TimeoutSec", "TimeoutStopSec")
        and a.value.text
        and a.value.span() == span
    )
    ctx.add(
        "OP405",
        span,
        f"systemd sends SIGKILL {_fmt(timeout)} after asking vLLM to stop: too short for "
        f"its workers to free GPU memory cleanly; use at least {_fmt(MIN_STOP_TIMEOUT_SEC)}",
        path=path,
    )
    return iter(())


@register(
    "OP406",
    "fixed-sleep-before-start",
    Severity.WARNING,
    doc="""
    A fixed `sleep` in `ExecStartPre=` instead of a check.

    What it does:
    Reports `ExecStartPre=` commands that only sleep (`/bin/sleep 30`, `bash -c 'sleep 30'`).

    Why is this bad?
    A fixed pause is either too short (the GPUs are not free yet and vLLM fails with
    out-of-memory after a long load) or too long (every restart wastes the time). Wait for
    the condition instead, with a bound.

    Example:
    ```ini
    ExecStartPre=/bin/sleep 30
    ```

    Use instead:
    ```ini
    ExecStartPre=/bin/bash -c 'for i in $(seq 1 30); do [ -z "$$(nvidia-smi --query-compute-apps=pid --format=csv,noheader)" ] && exit 0; sleep 2; done; exit 1'
    ```
    """,
)
def check_fixed_sleep(ctx: UnitContext) -> Iterator[Finding]:
    for cmd in ctx.commands:
        if cmd.key != "ExecStartPre":
            continue
        argv = cmd.argv
        is_sleep = cmd.command.path.rsplit("/", 1)[-1] == "sleep"
        found = shell_script(cmd)
        if found is not None:
            is_sleep = bool(re.fullmatch(r"\s*sleep\s+\S+\s*;?\s*", found[1].value.text))
        if not is_sleep:
            continue
        ctx.add(
            "OP406",
            cmd.assignment.value.span(),
            f"`{' '.join(argv)}` waits a fixed time instead of checking that the GPUs are "
            "free; wait for the condition with a bounded loop",
            path=cmd.assignment.path,
        )
    return iter(())


_GPU_SELECT = re.compile(r"nvidia-smi\b[^|;&\n]*?(?:\s-i\s*|\s--id[= ])([0-9][0-9,\s]*)")


def visible_gpu_count(value: str) -> int:
    """How many GPUs CUDA exposes for a CUDA_VISIBLE_DEVICES value: entries are indices
    or `GPU-…`/`MIG-…` UUIDs; CUDA stops at the first entry it cannot parse, and `-1`
    (any negative index) hides everything after it."""
    count = 0
    for raw in value.split(","):
        item = raw.strip()
        if item.isdigit() or item.startswith(("GPU-", "MIG-")):
            count += 1
            continue
        break
    return count


def gpus_in_use(ctx: UnitContext) -> int | None:
    """How many GPUs the unit uses: CUDA_VISIBLE_DEVICES, else --tensor-parallel-size."""
    visible = ctx.environment.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.value.strip():
        return visible_gpu_count(visible.value)
    for vc in vllm_commands(ctx):
        size = vc.args.int_value("tensor_parallel_size")
        if size:
            return size
    return None


@register(
    "OP407",
    "gpu-check-covers-subset",
    Severity.WARNING,
    doc="""
    A GPU check that looks at fewer GPUs than the service uses.

    What it does:
    Finds `nvidia-smi -i LIST` / `--id=LIST` in `ExecStartPre=`, `ExecStartPost=`,
    `ExecStop=` and `ExecStopPost=` commands (run directly or inside `bash -c` scripts) and
    compares the number of GPUs in LIST with `CUDA_VISIBLE_DEVICES` (or
    `--tensor-parallel-size`).

    Why is this bad?
    The seed deployment's cleanup checked GPUs 0–3 of 8: leftovers on GPUs 4–7 went
    unnoticed and the next start failed out of memory after loading for half an hour.

    Example:
    ```ini
    Environment=CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
    ExecStartPre=/bin/bash -c 'nvidia-smi -i 0,1,2,3 --query-gpu=memory.used --format=csv,noheader,nounits'
    ```

    Use instead:
    ```ini
    ExecStartPre=/bin/bash -c 'nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits'
    ```
    (no `-i`: every GPU is listed).
    """,
)
def check_gpu_subset(ctx: UnitContext) -> Iterator[Finding]:
    total = gpus_in_use(ctx)
    if not total:
        return iter(())
    for cmd in ctx.commands:
        if cmd.key not in ("ExecStartPre", "ExecStopPost", "ExecStartPost", "ExecStop"):
            continue
        found = shell_script(cmd)
        traced = found[1].value if found else _command_line(cmd)
        for m in _GPU_SELECT.finditer(traced.text):
            ids = [x for x in re.split(r"[,\s]+", m.group(1).strip()) if x]
            if len(ids) >= total:
                continue
            ctx.add(
                "OP407",
                traced.span(m.start(1), m.start(1) + len(m.group(1).rstrip())),
                f"this check looks at GPU(s) {','.join(ids)} only, but the service uses "
                f"{total} GPUs: leftovers on the others go unnoticed",
                path=cmd.assignment.path,
            )
    return iter(())


def _command_line(cmd: Command) -> Traced:
    """The argv joined with blanks, like a shell line (`nvidia-smi -i 0,1 …`), every
    character still pointing into the file (a blank at the end of the word before it)."""
    parts: list[Traced] = []
    last = cmd.assignment.value.origins[0]
    for arg in cmd.args:
        if parts:
            parts.append(Traced(" ", (last,)))
        parts.append(arg.value)
        last = arg.value.origins[-1] if arg.value.origins else last
    return join(parts)
