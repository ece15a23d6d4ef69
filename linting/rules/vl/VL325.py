from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from linting.context import RunContext, UnitContext, VllmCommand
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.vl._commands import command_span
from linting.spans import Span
from linting.vllm.invocation import (
    ALL_INTERFACES,
    DEFAULT_PORT,
)


@dataclass(frozen=True)
class _Listener:
    unit: UnitContext
    vc: VllmCommand
    host: str | None
    port: int
    span: Span
    explicit: bool


def _listeners(ctx: UnitContext) -> Iterator[_Listener]:
    for vc in ctx.vllm_commands:
        if vc.command.key != "ExecStart":
            continue
        args = vc.args
        option = args.last("port")
        host_opt = args.last("host")
        host = host_opt.value.text if host_opt and host_opt.value else None
        if option is None:
            if args.config_file:
                continue  # the port may come from the --config file
            yield _Listener(ctx, vc, host, DEFAULT_PORT, command_span(vc), False)
            continue
        port = args.int_value("port")
        if port is not None and option.value is not None:
            yield _Listener(ctx, vc, host, port, option.value.span(), True)


def _overlap(a: str | None, b: str | None) -> bool:
    """Two binds collide when equal or when either is every interface (`--host` unset or
    empty binds all: uvicorn gets host=None)."""
    if a is None or b is None or a in ALL_INTERFACES or b in ALL_INTERFACES:
        return True
    return a == b


@rule("VL325", Severity.ERROR, per_run=True)
def duplicate_port(run: RunContext) -> Iterator[tuple[UnitContext, Hit]]:
    """
    Two vLLM units of one lint run listen on the same port.

    What it does:
    Compares `--port` (default 8000 when absent) and `--host` (absent, empty or `0.0.0.0`
    means every interface) of the vLLM `ExecStart=` commands of all units linted
    together, and reports both units.

    Why is this bad?
    The second server to start loads its model (minutes, GPU memory) and then fails to
    bind with "address already in use" — or, with one port left at the default 8000,
    health checks and the benchmark talk to the wrong model.

    Example:
    ```ini
    # vllm-a.service
    ExecStart=/opt/vllm/bin/vllm serve /models/a
    # vllm-b.service
    ExecStart=/opt/vllm/bin/vllm serve /models/b
    ```

    Use instead:
    ```ini
    # vllm-a.service
    ExecStart=/opt/vllm/bin/vllm serve /models/a --port 8001
    # vllm-b.service
    ExecStart=/opt/vllm/bin/vllm serve /models/b --port 8002
    ```
    """
    listeners = [item for unit in run.units for item in _listeners(unit)]
    by_port: dict[int, list[_Listener]] = {}
    for item in listeners:
        by_port.setdefault(item.port, []).append(item)
    for a in listeners:
        for b in by_port[a.port]:
            if a is b or a.unit is b.unit or not _overlap(a.host, b.host):
                continue
            default = "" if a.explicit else f" (no --port: vLLM's default {DEFAULT_PORT})"
            yield (
                a.unit,
                Hit(
                    a.span,
                    f"port {a.port}{default} is also used by {b.unit.unit.name} "
                    f"(line {b.span.start.line}): the second server to start fails to bind "
                    '("address already in use") after loading its model',
                    {"port": a.port, "other_unit": b.unit.unit.path},
                    path=a.vc.path,
                ),
            )
            break
