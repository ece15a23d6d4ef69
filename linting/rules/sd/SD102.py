from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.sd._sections import allowed_sections, catalog_for


@rule("SD102", Severity.ERROR)
def unknown_key(ctx: UnitContext) -> Iterator[Hit]:
    """
    A key systemd does not know in this section; the setting is ignored.

    What it does:
    Checks every `Key=` against the keys systemd of the target version accepts in that
    section (tables generated from `systemd --dump-configuration-items`), and suggests the
    closest known key. `X-…` keys are private extensions and are skipped.

    Why is this bad?
    systemd logs "Unknown key name 'Enviroment' in section 'Service', ignoring." and the
    service starts without the setting: a typo in `Environment=` means the variables are
    simply missing at run time.

    Example:
    ```ini
    [Service]
    Enviroment=CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
    ```

    Use instead:
    ```ini
    [Service]
    Environment=CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
    ```
    """
    allowed = allowed_sections(ctx)
    if not allowed:
        return
    catalog = catalog_for(ctx)
    for a in ctx.unit.assignments:
        if a.section not in allowed or a.name.startswith("X-"):
            continue
        if catalog.parser(a.section, a.name) is not None:
            continue
        elsewhere = [s for s in sorted(allowed) if catalog.parser(s, a.name) is not None]
        if elsewhere:
            message = (
                f"{a.name}= belongs in the [{elsewhere[0]}] section, not [{a.section}]: "
                "systemd ignores it here"
            )
        else:
            hint = catalog.suggest(a.name, catalog.keys(a.section))
            message = f"unknown key {a.name}= in [{a.section}] (systemd {ctx.version} ignores it)"
            if hint:
                message += f"; did you mean {hint}=?"
        yield Hit(a.key.span(), message, path=a.path)
