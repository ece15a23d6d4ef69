from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.systemd.values import parse_boolean


@rule("OP415", Severity.WARNING)
def no_sigkill_for_gpu_service(ctx: UnitContext) -> Iterator[Hit]:
    """
    `SendSIGKILL=no` on a vLLM service.

    What it does:
    Reports `SendSIGKILL=no` (or another false value) in a unit that runs a vLLM server.

    Why is this bad?
    When vLLM's workers do not exit on SIGTERM within `TimeoutStopSec=`, systemd then
    sends nothing more (systemd.kill(5)): the unit is stopped with the processes still
    alive and holding their GPU memory, and the next start fails for want of it
    ("Free memory on device … is less than desired GPU memory utilization").

    Example:
    ```ini
    SendSIGKILL=no
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```

    Use instead:
    ```ini
    TimeoutStopSec=120s
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```
    (the default `SendSIGKILL=yes` kills what is left after the timeout).
    """
    setting = ctx.unit.last("Service", "SendSIGKILL")
    if setting is None or not ctx.vllm_servers:
        return
    if parse_boolean(setting.value.text) is not False:
        return
    yield Hit(
        setting.value.span(),
        f"SendSIGKILL={setting.value.text}: a vLLM worker that ignores SIGTERM is left "
        "running after TimeoutStopSec= with its GPU memory, and the next start fails; "
        "keep the default (yes)",
        path=setting.path,
    )
