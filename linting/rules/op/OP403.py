from __future__ import annotations

from collections.abc import Iterator

from linting.commands import Command, shell_script
from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.op._timeouts import fmt_seconds, timeout_in_effect
from linting.rules.registry import rule
from linting.shell.waitloops import estimate_script, sleep_seconds


@rule("OP403", Severity.ERROR)
def wait_loop_exceeds_start_timeout(ctx: UnitContext) -> Iterator[Hit]:
    """
    A wait loop or a fixed sleep in `ExecStartPre=` that can run longer than
    `TimeoutStartSec=`.

    What it does:
    Estimates the worst case of loops in `bash -c` scripts of `ExecStartPre=` and
    `ExecStartPost=` (iterations × sleeps, plus fixed sleeps; `sleep N` run directly
    counts too) and compares it with `TimeoutStartSec=` (or
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
    """
    timeout, timeout_span = timeout_in_effect(ctx, "TimeoutSec", "TimeoutStartSec")
    for cmd in ctx.commands:
        if cmd.key not in ("ExecStartPre", "ExecStartPost"):
            continue
        waits = _worst_case(cmd)
        if waits is None:
            continue
        worst, detail = waits
        span = cmd.assignment.value.span()
        where = "TimeoutStartSec=" + (fmt_seconds(timeout) if timeout else "infinity")
        if timeout_span is None and timeout:
            where += " (the default)"
        if worst is None:
            if timeout is None:
                continue
            yield Hit(
                span,
                f"this {cmd.key} wait loop has no bound: systemd kills it after {where} and "
                "the start fails; bound the loop and raise TimeoutStartSec= to cover it",
                path=cmd.assignment.path,
                severity=Severity.WARNING,
            )
            continue
        if timeout is not None and worst > timeout:
            yield Hit(
                span,
                f"worst case of this {cmd.key} is at least {fmt_seconds(worst)} ({detail}), more than "
                f"{where}: systemd kills it and the start fails; set TimeoutStartSec= above "
                f"{fmt_seconds(worst)} or shorten the wait",
                {"worst_case_seconds": worst, "timeout_seconds": timeout},
                path=cmd.assignment.path,
            )


def _worst_case(cmd: Command) -> tuple[float | None, str] | None:
    """How long a command can wait at worst (None: unbounded) and what that is made of;
    None when it does not wait: wait loops and fixed sleeps of a `bash -c` script, or the
    command `sleep N` itself (coreutils sleep: N with an s/m/h/d suffix)."""
    found = shell_script(cmd)
    if found is None:
        if cmd.command.path.rsplit("/", 1)[-1] != "sleep":
            return None
        seconds = sleep_seconds("sleep " + " ".join(cmd.argv[1:]))
        return (seconds, "a fixed sleep") if seconds else None
    worst, loops = estimate_script(found[1].value.text)
    if not loops:
        return (worst, "a fixed sleep") if worst else None
    detail = "; ".join(
        f"{loop.iterations} × {loop.sleep_per_iteration:g} s"
        for loop in loops
        if loop.iterations is not None and loop.sleep_per_iteration
    )
    return worst, detail
