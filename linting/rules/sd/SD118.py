from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.execline.specifiers import find_specifiers
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.unitfile import Assignment

# Settings where an empty instance name makes no difference worth reporting.
_HARMLESS = ("Description", "Documentation")
# systemd refuses to load the unit when these become empty (measured on 252: User=%i is
# "Invalid user/group name or numeric ID: ", fatal).
_FATAL = ("User", "Group")


@rule("SD118", Severity.WARNING)
def instance_specifier_outside_template(ctx: UnitContext) -> Iterator[Hit]:
    """
    `%i` or `%I` in a unit that is not a template.

    What it does:
    In a unit whose name has no `@` (not `name@.service`, not `name@instance.service`),
    finds `%i` and `%I` in `[Service]` settings and Exec lines, and says what the setting
    becomes. An error in `User=` and `Group=`, a warning elsewhere.

    Why is this bad?
    Outside a template the instance name is empty (src/shared/specifier.c): `User=%i`
    becomes `User=`, which systemd refuses ("Invalid user/group name or numeric ID"), and
    `EnvironmentFile=/home/%i/.env` becomes `/home//.env`. Usually the file was meant to be
    `vllm@.service` and started as `vllm@alice.service`.

    Example:
    ```ini
    # vllm.service
    [Service]
    User=%i
    ExecStart=/opt/vllm/bin/vllm serve /models/%i
    ```

    Use instead:
    ```ini
    # vllm@.service, started as vllm@alice.service
    [Service]
    User=%i
    ExecStart=/opt/vllm/bin/vllm serve /models/%i
    ```
    """
    if "@" in ctx.unit.name:
        return
    for a in ctx.unit.assignments:
        if a.section != "Service" or a.name in _HARMLESS:
            continue
        for use in find_specifiers(a.value.text, ctx.version):
            if use.letter in "iI":
                yield _hit(ctx, a, use.offset, use.letter)


def _hit(ctx: UnitContext, a: Assignment, offset: int, letter: str) -> Hit:
    span = a.value.span(offset, offset + 2)
    becomes = a.value.text.replace(f"%{letter}", "")
    if a.name in _FATAL:
        return Hit(
            span,
            f"`%{letter}` is empty outside a template unit: {a.name}= becomes empty and "
            'systemd refuses to load the unit ("Invalid user/group name or numeric ID"); '
            f"name the file {ctx.unit.name.replace('.', '@.', 1)} to make it a template",
            path=a.path,
            severity=Severity.ERROR,
        )
    return Hit(
        span,
        f"`%{letter}` is empty outside a template unit: {a.name}= becomes `{becomes}`; "
        f"name the file {ctx.unit.name.replace('.', '@.', 1)} to make it a template",
        path=a.path,
    )
