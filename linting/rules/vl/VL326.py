from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.vl._commands import problems
from linting.rules.vl._messages import AT_PARSE, vllm_label
from linting.vllm.invocation import (
    ArgProblemKind,
)


@rule("VL326", Severity.ERROR)
def missing_flag_value(ctx: UnitContext) -> Iterator[Hit]:
    """
    An option that needs a value is last or followed by another option.

    What it does:
    Finds value-taking options with no value after them in the argv vLLM receives.

    Why is this bad?
    argparse exits with "expected one argument". It often follows from an unset `$VAR`
    that systemd removed (see EX202).

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --served-model-name --port 8001
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --served-model-name kimi --port 8001
    ```
    """
    for vc, problem in problems(ctx, ArgProblemKind.MISSING_VALUE):
        yield Hit(
            problem.text.span(),
            f"{vllm_label(vc.args.catalog)} refuses to start {AT_PARSE}: {problem.message}",
            path=vc.path,
        )
