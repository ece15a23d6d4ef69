from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule


@rule("OP404", Severity.WARNING)
def no_restart_policy(ctx: UnitContext) -> Iterator[Hit]:
    """
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
    """
    if not ctx.vllm_servers:
        return
    restart = ctx.unit.last("Service", "Restart")
    if restart is not None and restart.value.text not in ("", "no"):
        return
    if restart is None:
        span, path = ctx.unit.anchor("Service")
    else:
        span, path = restart.value.span(fallback=restart.key.span()), restart.path
    yield Hit(
        span,
        "no Restart= policy: if vLLM crashes the endpoint stays down; add "
        "Restart=on-failure with RestartSec=",
        path=path,
    )
