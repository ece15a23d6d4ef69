from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.sd._sections import catalog_for


@rule("SD115", Severity.WARNING)
def ignored_legacy_key(ctx: UnitContext) -> Iterator[Hit]:
    """
    A legacy key that systemd still accepts but ignores.

    What it does:
    Reports keys the target systemd lists as removed (e.g. `Capabilities=`, `NetClass=`).

    Why is this bad?
    systemd logs that the setting is unsupported and does nothing with it.

    Example:
    ```ini
    [Service]
    NetClass=1
    ```

    Use instead:
    ```ini
    [Service]
    # remove the line; see systemd.exec(5) for today's replacement
    ```
    """
    catalog = catalog_for(ctx)
    for a in ctx.unit.assignments:
        if catalog.is_removed(a.section, a.name):
            yield Hit(
                a.key.span(),
                f"{a.name}= is no longer supported by systemd {ctx.version}; it is ignored",
                path=a.path,
            )
