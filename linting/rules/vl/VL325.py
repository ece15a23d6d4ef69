from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from linting.context import RunContext, UnitContext
from linting.execline.env_substitution import has_unknown
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.vl._commands import command_span
from linting.rules.vl._machines import machines as _machine
from linting.servers import VllmCommand
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
    for vc in ctx.vllm_servers:
        if vc.container is not None:
            continue  # a container's port is its own; the host port is `-p`'s
        args = vc.args
        option = args.last("port")
        host_opt = args.last("host")
        host = host_opt.value.text if host_opt and host_opt.value else None
        if host is not None and has_unknown(host):
            continue  # from a variable the linter cannot read
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


@rule("VL325", Severity.WARNING, per_run=True)
def duplicate_port(run: RunContext) -> Iterator[tuple[UnitContext, Hit]]:
    """
    Two vLLM units that run on one machine listen on the same port.

    What it does:
    Compares `--port` (default 8000 when absent) and `--host` (absent, empty or `0.0.0.0`
    means every interface) of the vLLM `ExecStart=` commands of units that run on one
    machine, and reports both units. Units run on one machine when they are in the same
    directory, or named together by `--same-host` (unit files, directories or globs,
    comma-separated; `same-host = [["a.service", "b.service"]]` in `[tool.lintunits]`).
    Units for different hosts, or two alternative copies of one unit, belong in different
    directories; a single finding is silenced with `# lintunits: disable=VL325` on the
    line above it, all of them with `--ignore VL325`.

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
    machines = {id(unit): set(_machine(unit)) for unit in run.units}
    by_port: dict[int, list[_Listener]] = {}
    for item in listeners:
        by_port.setdefault(item.port, []).append(item)
    for a in listeners:
        for b in by_port[a.port]:
            if a is b or a.unit is b.unit or not _overlap(a.host, b.host):
                continue
            if not machines[id(a.unit)] & machines[id(b.unit)]:
                continue  # different machines as far as the run says
            default = "" if a.explicit else f" (no --port: vLLM's default {DEFAULT_PORT})"
            yield (
                a.unit,
                Hit(
                    a.span,
                    f"port {a.port}{default} is also used by {b.unit.unit.name} "
                    f"(line {b.span.start.line}) on the same machine: the second server to "
                    'start fails to bind ("address already in use") after loading its model. '
                    "If they run on different machines, keep them in different directories "
                    "or list each machine's units with --same-host",
                    {"port": a.port, "other_unit": b.unit.unit.path},
                    path=a.vc.path,
                ),
            )
            break
