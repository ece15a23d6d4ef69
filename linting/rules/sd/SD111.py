from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.execline.specifiers import find_specifiers
from linting.findings import Hit, Severity
from linting.rules.registry import rule


@rule("SD111", Severity.WARNING)
def deprecated_specifier(ctx: UnitContext) -> Iterator[Hit]:
    """
    A deprecated specifier (`%c`, `%r`, `%R`).

    What it does:
    Finds specifiers that systemd still resolves but logs as deprecated.

    Why is this bad?
    systemd logs "Specifier '%r' used in unit configuration, which is deprecated" and the
    value does not mean what it once did.

    Example:
    ```ini
    ExecStart=/bin/echo %r
    ```

    Use instead:
    ```ini
    ExecStart=/bin/echo /system.slice
    ```
    """
    for _key, assignment, line in ctx.exec_lines:
        for command in line.commands:
            for word in command.words:
                for use in find_specifiers(word.value.text, ctx.version):
                    if use.deprecated:
                        yield Hit(
                            word.value.span(use.offset, use.offset + 2),
                            f"specifier `%{use.letter}` is deprecated in systemd {ctx.version}",
                            path=assignment.path,
                        )
