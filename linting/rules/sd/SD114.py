from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.execline.command import ExecProblemKind
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.sd._exec_problems import exec_problems, with_consequence


@rule("SD114", Severity.WARNING)
def semicolon_separator(ctx: UnitContext) -> Iterator[Hit]:
    """
    A lone `;` separating two commands in one Exec line.

    What it does:
    Finds `;` used as a command separator in Exec lines (deprecated since systemd 257).

    Why is this bad?
    systemd.service(5) of v257 marks it deprecated (257.13 still accepts it silently); one command per `ExecStartPre=` line is clearer and survives future versions.

    Example:
    ```ini
    ExecStartPre=/bin/true ; /bin/sleep 1
    ```

    Use instead:
    ```ini
    ExecStartPre=/bin/true
    ExecStartPre=/bin/sleep 1
    ```
    """
    for assignment, problem, consequence in exec_problems(ctx, ExecProblemKind.SEMICOLON):
        message = with_consequence(problem.message, consequence)
        yield Hit(problem.span, message, path=assignment.path)
