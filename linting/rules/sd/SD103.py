from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule


@rule("SD103", Severity.ERROR)
def malformed_line(ctx: UnitContext) -> Iterator[Hit]:
    """
    A line systemd cannot read as a section header or a `Key=Value` assignment.

    What it does:
    Reports lines without `=`, assignments before the first section header and section
    headers without a closing `]`.

    Why is this bad?
    systemd skips such lines with a warning (src/shared/conf-parser.c `parse_line()`), so
    what they were meant to set is not set; a broken header also hides the whole section.

    Example:
    ```ini
    [Service
    ExecStart /opt/vllm/bin/vllm serve /models/m
    ```

    Use instead:
    ```ini
    [Service]
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```
    """
    for problem in ctx.unit.problems:
        yield Hit(problem.span, problem.message, path=problem.path)
