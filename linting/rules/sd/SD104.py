from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.sd._sections import allowed_sections, catalog_for
from linting.systemd.values import VALIDATORS


@rule("SD104", Severity.ERROR)
def invalid_value(ctx: UnitContext) -> Iterator[Hit]:
    """
    A value systemd cannot parse for a typed key (boolean, time span, enumeration).

    What it does:
    Validates the values of typed keys (`Restart=`, `Type=`, `KillMode=`, `TimeoutStartSec=`,
    booleans, integers…) with ports of systemd's own parsers for the target version.

    Why is this bad?
    systemd logs "Failed to parse …, ignoring" and keeps the default, so `TimeoutStartSec=30
    mins` silently leaves the 90 s default in force — too short for a model that loads for
    half an hour.

    Example:
    ```ini
    TimeoutStartSec=30 mins
    Restart=on-failur
    ```

    Use instead:
    ```ini
    TimeoutStartSec=30min
    Restart=on-failure
    ```
    """
    catalog = catalog_for(ctx)
    allowed = allowed_sections(ctx)
    for a in ctx.unit.assignments:
        if allowed and a.section not in allowed:
            continue
        validator = VALIDATORS.get(catalog.parser(a.section, a.name) or "")
        if validator is None:
            continue
        problem = validator(a.value.text, ctx.version)
        if problem is None:
            continue
        span = a.value.span(problem.start, problem.end, fallback=a.key.span())
        consequence = ", so systemd ignores the setting" if problem.ignored else ""
        yield Hit(
            span,
            f"{a.name}={a.value.text}: {problem.message}{consequence}",
            path=a.path,
            severity=None if problem.ignored else Severity.WARNING,
        )
