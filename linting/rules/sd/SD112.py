from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule


@rule("SD112", Severity.ERROR)
def missing_exec_start(ctx: UnitContext) -> Iterator[Hit]:
    """
    A service with no command to run.

    What it does:
    Reports `.service` units that have no `ExecStart=` (after resets), no `ExecStop=` and
    no `SuccessAction=`. When an `ExecStart=` line is there but systemd cannot load it, the
    finding about that line (SD106, SD108, SD110) says so instead.

    Why is this bad?
    systemd refuses to load it: "Service has no ExecStart=, ExecStop=, or SuccessAction=.
    Refusing."

    Example:
    ```ini
    [Service]
    ExecStartPre=/usr/bin/nvidia-smi
    ```

    Use instead:
    ```ini
    [Service]
    ExecStartPre=/usr/bin/nvidia-smi
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```
    """
    unit = ctx.unit
    if unit.unit_type != "service" or unit.is_dropin_only:
        return
    keys = {c.key for c in ctx.commands}
    if keys & {"ExecStart", "ExecStop"} or unit.last_value("Unit", "SuccessAction"):
        return
    if any(key == "ExecStart" and line.problems for key, _, line in ctx.exec_lines):
        return  # an ExecStart= line systemd could not load: SD106/SD108/SD110 say why
    anchor, path = unit.anchor("Service")
    yield Hit(
        anchor,
        "no ExecStart= command systemd would run: it refuses to load the service "
        '("Service has no ExecStart=, ExecStop=, or SuccessAction=")',
        path=path,
    )
