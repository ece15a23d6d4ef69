from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule


@rule("OP402", Severity.WARNING)
def kill_mode_leaves_gpu_workers(ctx: UnitContext) -> Iterator[Hit]:
    """
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
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```

    Use instead:
    ```ini
    KillMode=control-group
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```
    (the default: every process of the unit is stopped).
    """
    mode = ctx.unit.last("Service", "KillMode")
    if mode is None or mode.value.text not in ("process", "none") or not ctx.vllm_servers:
        return
    yield Hit(
        mode.value.span(),
        f"KillMode={mode.value.text}: on stop, vLLM's EngineCore/worker processes can survive "
        "and keep their GPU memory; use KillMode=control-group (the default)",
        path=mode.path,
    )
