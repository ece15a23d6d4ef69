from __future__ import annotations

import re
from collections.abc import Iterator

from linting.commands import Command, shell_script
from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule

# A `sleep N` statement (at the start of the script or after `;`, `&&`, `||`, a newline)
# in a script without a loop: a pause of fixed length, not a bounded wait for a condition.
_SLEEP_STATEMENT = re.compile(r"(?:^|[;&|\n])\s*sleep\s+[0-9.]+[smhd]?\s*(?:$|[;&|\n])")
_LOOP = re.compile(r"(?:^|[;&|\n('\"`]|\bdo|\bthen)\s*(?:for|while|until)\b")
# `timeout N CMD`: coreutils timeout(1) bounds a wait for CMD's condition.
_TIMEOUT = re.compile(
    r"(?:^|[;&|\n('\"`]|\bdo|\bthen)\s*(?:\S*/)?timeout\s+(?:-\S+\s+)*[0-9.]+[smhd]?\s"
)


@rule("OP406", Severity.WARNING)
def fixed_sleep_before_start(ctx: UnitContext) -> Iterator[Hit]:
    """
    A fixed `sleep` in `ExecStartPre=` or `ExecStopPost=` instead of a check.

    What it does:
    Reports `ExecStartPre=` and `ExecStopPost=` commands (where units wait for the GPUs to
    be free) that only sleep (`/bin/sleep 30`, `bash -c 'sleep 30'`),
    and shell scripts that sleep a fixed time without a loop around the sleep
    (`bash -c 'pkill -f vllm; sleep 30'`). A sleep in commands of a key that also waits
    for a condition with a bound (a loop, `timeout N …`) is a harmless pause before that
    check and is not reported.

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
    """
    checked = {cmd.key for cmd in ctx.commands if _bounded_wait(cmd)}
    for cmd in ctx.commands:
        if cmd.key not in ("ExecStartPre", "ExecStopPost") or cmd.key in checked:
            continue
        argv = cmd.argv
        is_sleep = cmd.command.path.rsplit("/", 1)[-1] == "sleep"
        found = shell_script(cmd)
        if found is not None:
            script = found[1].value.text
            is_sleep = bool(re.fullmatch(r"\s*sleep\s+\S+\s*;?\s*", script)) or bool(
                _SLEEP_STATEMENT.search(script)
            )
        if not is_sleep:
            continue
        yield Hit(
            cmd.assignment.value.span(),
            f"`{' '.join(argv)}` waits a fixed time instead of checking that the GPUs are "
            "free; wait for the condition with a bounded loop",
            path=cmd.assignment.path,
        )


def _bounded_wait(cmd: Command) -> bool:
    """Does this command wait for a condition with a bound: a shell loop, or timeout(1)?"""
    if cmd.command.path.rsplit("/", 1)[-1] == "timeout":
        return True
    found = shell_script(cmd)
    if found is None:
        return False
    script = found[1].value.text
    return bool(_LOOP.search(script) or _TIMEOUT.search(script))
