from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.vl._commands import command_span
from linting.systemd.values import parse_boolean
from linting.vllm.invocation import ALL_INTERFACES

ROOT_NAMES = ("root", "0")


@rule("OP410", Severity.WARNING)
def root_on_all_interfaces(ctx: UnitContext) -> Iterator[Hit]:
    """
    A vLLM server that runs as root (no `User=`) and listens on every network interface.

    What it does:
    Reports vLLM `ExecStart=` commands of system units without `User=`, or with
    `User=root` (or `0`) written out, and without `DynamicUser=yes`, whose `--host` is
    absent, empty, `0.0.0.0` or `::`. A user unit (`systemctl --user`) runs as its user,
    never as root, and is not reported.

    Why is this bad?
    Without `User=` a system service runs as root. vLLM binds every address unless told
    otherwise: `--host` defaults to None and the server socket is bound to
    `(args.host or "", args.port)` (vllm/entrypoints/openai/api_server.py:1065 in 0.8.5,
    :427 in 0.16.0; vllm/entrypoints/launchers/launcher.py:378 in 0.33.0). Anyone who can
    reach the port talks to a root process that loads code from model repositories
    (`--trust-remote-code`) and, with some options, reads files from the host.

    Example:
    ```ini
    [Service]
    ExecStart=/opt/vllm/bin/vllm serve /models/m --port 8000
    ```

    Use instead:
    ```ini
    [Service]
    User=vllm
    ExecStart=/opt/vllm/bin/vllm serve /models/m --host 127.0.0.1 --port 8000
    ```
    (or the address the clients use, behind a firewall or a proxy).
    """
    user = ctx.unit.last_value("Service", "User")
    if (user and user not in ROOT_NAMES) or ctx.user_manager is not None:
        return
    dynamic = ctx.unit.last_value("Service", "DynamicUser")
    if dynamic is not None and parse_boolean(dynamic):
        return
    for vc in ctx.vllm_servers:
        if vc.container is not None:
            continue  # the engine's user and `-p` decide that for a container
        host = vc.args.last("host")
        value = host.value if host is not None else None
        if value is not None and value.text not in ALL_INTERFACES:
            continue
        where = (
            "--host binds every interface"
            if value is not None
            else "no --host: vLLM binds every interface"
        )
        yield Hit(
            value.span() if value is not None and value.text else command_span(vc),
            f"vLLM runs as root ({'User=' + user if user else 'no User='}) and {where}: anyone who can reach the port talks "
            "to a root process; add User= and --host with the address clients use "
            "(127.0.0.1 behind a proxy)",
            path=vc.path,
        )
