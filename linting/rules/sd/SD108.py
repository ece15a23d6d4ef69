from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.execline.command import ExecProblemKind
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.sd._exec_problems import exec_problems, with_consequence


@rule("SD108", Severity.ERROR)
def unbalanced_quotes(ctx: UnitContext) -> Iterator[Hit]:
    """
    A quote that is never closed in an Exec line.

    What it does:
    Finds Exec words whose `'` or `"` has no closing partner.

    Why is this bad?
    systemd logs "Unbalanced quoting, ignoring" and drops the command; in anything but the first word the unit fails to load (src/basic/extract-word.c).

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "ngram"}
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "ngram"}'
    ```
    """
    for assignment, problem, consequence in exec_problems(ctx, ExecProblemKind.UNBALANCED_QUOTE):
        message = with_consequence(problem.message, consequence)
        yield Hit(problem.span, message, path=assignment.path)
