from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.op._timeouts import fmt_seconds, timeout_in_effect
from linting.rules.registry import rule

MIN_STOP_TIMEOUT_SEC = 30.0


@rule("OP405", Severity.WARNING)
def stop_timeout_too_short(ctx: UnitContext) -> Iterator[Hit]:
    """
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
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```

    Use instead:
    ```ini
    TimeoutStopSec=120s
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```
    """
    if not ctx.vllm_servers:
        return
    timeout, span = timeout_in_effect(ctx, "TimeoutSec", "TimeoutStopSec")
    if span is None or timeout is None or timeout >= MIN_STOP_TIMEOUT_SEC:
        return
    # the file the setting came from (a drop-in, maybe)
    path = next(
        a.path
        for a in reversed(ctx.unit.assignments)
        if a.section == "Service"
        and a.name in ("TimeoutSec", "TimeoutStopSec")
        and a.value.text
        and a.value.span() == span
    )
    yield Hit(
        span,
        f"systemd sends SIGKILL {fmt_seconds(timeout)} after asking vLLM to stop: too short for "
        f"its workers to free GPU memory cleanly; use at least {fmt_seconds(MIN_STOP_TIMEOUT_SEC)}",
        path=path,
    )
