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


@rule("VL328", Severity.ERROR)
def unrecognized_argument(ctx: UnitContext) -> Iterator[Hit]:
    """
    A stray positional argument (or a flag value that is not consumed) in a vLLM command.

    What it does:
    Finds words that are neither an option, an option's value, nor the model.

    Why is this bad?
    argparse exits with "unrecognized arguments". Typical causes: a second model path, a
    value given to a flag that takes none, or a `${VAR}` holding several words passed as
    one argument.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m /models/draft --port 8001
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --port 8001
    ```
    """
    for vc, problem in problems(
        ctx, ArgProblemKind.EXTRA_POSITIONAL, ArgProblemKind.UNEXPECTED_VALUE
    ):
        yield Hit(
            problem.text.span(),
            f"{vllm_label(vc.args.catalog)} refuses to start {AT_PARSE}: {problem.message}",
            path=vc.path,
        )
