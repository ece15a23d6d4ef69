from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.execline.command import ExecProblemKind
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.sd._exec_problems import exec_problems, with_consequence


@rule("SD109", Severity.WARNING)
def unknown_escape(ctx: UnitContext) -> Iterator[Hit]:
    """
    A backslash escape systemd does not know.

    What it does:
    Finds `\\\\X` sequences in Exec lines that are not C escapes systemd understands.

    Why is this bad?
    systemd logs "Ignoring unknown escape sequences" and passes backslash and character verbatim; a regex like `\\\\d` works by accident, a Windows-style path does not.

    Example:
    ```ini
    ExecStartPre=/bin/grep -q '\\d' /etc/vllm/ready
    ```

    Use instead:
    ```ini
    ExecStartPre=/bin/grep -q '\\\\d' /etc/vllm/ready
    ```
    """
    for assignment, problem, consequence in exec_problems(ctx, ExecProblemKind.UNKNOWN_ESCAPE):
        seq = ctx.unit.text_at(assignment.path, problem.span) or "\\"
        message = (
            f"unknown escape sequence `{seq}`: systemd keeps the backslash and the "
            f"character as written (write `\\\\` for a backslash)"
        )
        yield Hit(problem.span, with_consequence(message, consequence), path=assignment.path)
