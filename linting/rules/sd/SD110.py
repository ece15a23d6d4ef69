from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.execline.command import ExecProblemKind
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.sd._exec_problems import exec_problems, with_consequence


@rule("SD110", Severity.ERROR)
def unknown_specifier(ctx: UnitContext) -> Iterator[Hit]:
    """
    A `%` followed by a letter or digit that is not a specifier of this systemd.

    What it does:
    Finds `%X` in Exec words where X is not a specifier of the target systemd version.

    Why is this bad?
    systemd fails to resolve it ("Invalid slot") and refuses to load the unit (src/shared/specifier.c).

    Example:
    ```ini
    ExecStartPre=/bin/bash -c 'printf "%5.1f\\n" 1'
    ```

    Use instead:
    ```ini
    ExecStartPre=/bin/bash -c 'printf "%%5.1f\\n" 1'
    ```
    """
    for assignment, problem, consequence in exec_problems(ctx, ExecProblemKind.UNKNOWN_SPECIFIER):
        letter = problem.data.get("letter", "?")
        message = (
            f"unknown specifier `%{letter}` for systemd {ctx.version} "
            '("Invalid slot"); write `%%` for a literal percent sign'
        )
        yield Hit(problem.span, with_consequence(message, consequence), path=assignment.path)
