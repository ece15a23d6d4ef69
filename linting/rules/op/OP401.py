from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.op._timeouts import fmt_seconds, timeout_in_effect
from linting.rules.registry import rule


@rule("OP401", Severity.ERROR)
def notify_type_with_vllm(ctx: UnitContext) -> Iterator[Hit]:
    """
    `Type=notify` for a vLLM server, which never sends `READY=1`.

    What it does:
    Reports `Type=notify` / `Type=notify-reload` on units whose `ExecStart=` runs vLLM.

    Why is this bad?
    systemd waits for an sd_notify `READY=1` that vLLM never sends, so the start "hangs"
    until `TimeoutStartSec=` and systemd then kills the server (systemd.service(5), Type=).

    Example:
    ```ini
    Type=notify
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```

    Use instead:
    ```ini
    Type=exec
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```
    and check readiness with `/health` (specadmin's deploy job does).
    """
    type_ = ctx.unit.last("Service", "Type")
    if type_ is None or type_.value.text not in ("notify", "notify-reload"):
        return
    if not ctx.vllm_servers:
        return
    timeout, _ = timeout_in_effect(ctx, "TimeoutSec", "TimeoutStartSec")
    after = (
        f"after TimeoutStartSec ({fmt_seconds(timeout)})" if timeout else "never (no start timeout)"
    )
    yield Hit(
        type_.value.span(),
        f"Type={type_.value.text}: vLLM never sends READY=1, so the start never completes and "
        f"systemd kills the server {after}; use Type=exec or Type=simple",
        path=type_.path,
    )
