from __future__ import annotations

from collections.abc import Iterator

from linting.commands import shell_script
from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.op._timeouts import fmt_seconds, timeout_in_effect
from linting.rules.registry import rule
from linting.shell.waitloops import estimate_script


@rule("OP403", Severity.ERROR)
def wait_loop_exceeds_start_timeout(ctx: UnitContext) -> Iterator[Hit]:
    """
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
    """
    timeout, timeout_span = timeout_in_effect(ctx, "TimeoutSec", "TimeoutStartSec")
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
            detail = "; ".join(
                f"{loop.iterations} × {loop.sleep_per_iteration:g} s"
                for loop in loops
                if loop.iterations is not None and loop.sleep_per_iteration
            )
            yield Hit(
                span,
                f"worst case of this {cmd.key} is at least {fmt_seconds(worst)} ({detail}), more than "
                f"{where}: systemd kills it and the start fails; set TimeoutStartSec= above "
                f"{fmt_seconds(worst)} or shorten the loop",
                {"worst_case_seconds": worst, "timeout_seconds": timeout},
                path=cmd.assignment.path,
            )
