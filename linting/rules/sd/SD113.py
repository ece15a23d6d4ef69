from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule


@rule("SD113", Severity.ERROR)
def invalid_environment(ctx: UnitContext) -> Iterator[Hit]:
    """
    An `Environment=` word that is not a valid `NAME=VALUE` assignment.

    What it does:
    Splits `Environment=` values the way systemd does (quotes group words) and checks each
    assignment's name.

    Why is this bad?
    systemd logs "Invalid environment assignment, ignoring" and the variable is not set:
    `Environment=CUDA_VISIBLE_DEVICES = 0,1` sets nothing.

    Example:
    ```ini
    Environment=CUDA-VISIBLE-DEVICES=0,1,2,3
    ```

    Use instead:
    ```ini
    Environment=CUDA_VISIBLE_DEVICES=0,1,2,3
    ```
    """
    for problem in ctx.environment_problems:
        yield Hit(problem.span, problem.message, path=problem.path or None)
