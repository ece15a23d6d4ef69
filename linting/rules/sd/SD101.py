from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.sd._sections import allowed_sections, catalog_for


@rule("SD101", Severity.ERROR)
def unknown_section(ctx: UnitContext) -> Iterator[Hit]:
    """
    A section systemd does not know for this unit type; all of its settings are ignored.

    What it does:
    Checks every `[Section]` header against the sections of the unit's type for the target
    systemd version. `[X-…]` sections are private extensions and are skipped.

    Why is this bad?
    systemd logs "Unknown section 'Sevice'. Ignoring." and drops every line until the next
    valid header (src/shared/conf-parser.c), so the service runs without those settings.

    Example:
    ```ini
    [Sevice]
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```

    Use instead:
    ```ini
    [Service]
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```
    """
    allowed = allowed_sections(ctx)
    if not allowed:
        return
    for header in ctx.unit.headers:
        if header.name in allowed or header.name.startswith("X-"):
            continue
        hint = catalog_for(ctx).suggest(header.name, allowed)
        yield Hit(
            header.span,
            f"unknown section [{header.name}] for a .{ctx.unit.unit_type} unit: systemd "
            "ignores it and every setting in it" + (f"; did you mean [{hint}]?" if hint else ""),
            path=header.path,
        )
