from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule


@rule("SD105", Severity.ERROR)
def multiple_exec_start(ctx: UnitContext) -> Iterator[Hit]:
    """
    More than one `ExecStart=` command in a service that is not `Type=oneshot`.

    What it does:
    Counts the commands in effect (after resets by an empty `ExecStart=`, drop-ins
    included) and reports a second one.

    Why is this bad?
    systemd refuses to load the unit: "Service has more than one ExecStart= setting, which
    is only allowed for Type=oneshot services. Refusing." A drop-in that wants to replace
    the command must first reset the list with an empty `ExecStart=`.

    Example:
    ```ini
    # vllm.service
    [Service]
    ExecStart=/opt/vllm/bin/vllm serve /models/m --port 8000
    # vllm.service.d/override.conf
    [Service]
    ExecStart=/opt/vllm/bin/vllm serve /models/m --port 8001
    ```

    Use instead:
    ```ini
    # vllm.service
    [Service]
    ExecStart=/opt/vllm/bin/vllm serve /models/m --port 8000
    # vllm.service.d/override.conf
    [Service]
    ExecStart=
    ExecStart=/opt/vllm/bin/vllm serve /models/m --port 8001
    ```
    """
    if ctx.unit.unit_type != "service":
        return
    if (ctx.unit.last_value("Service", "Type") or "simple") == "oneshot":
        return
    starts = [c for c in ctx.commands if c.key == "ExecStart"]
    for extra in starts[1:]:
        yield Hit(
            extra.assignment.key.span(),
            "a second ExecStart= command: systemd refuses to load a service with more than "
            "one unless Type=oneshot (reset the list with an empty ExecStart= first)",
            path=extra.assignment.path,
        )
