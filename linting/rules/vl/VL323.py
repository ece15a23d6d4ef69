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


@rule("VL323", Severity.ERROR)
def invalid_number(ctx: UnitContext) -> Iterator[Hit]:
    """
    A value that an int, float or human-readable int option cannot parse.

    What it does:
    Applies the option's argparse `type` of the target version: `int`, `float`, and
    vLLM's `human_readable_int` (`32k` = 32000, `32K` = 32768; `auto`/`-1` where the
    option also accepts them).

    Why is this bad?
    argparse exits with "invalid int value" (or similar) before anything is loaded.
    `--max-model-len 32q` or `--max-num-seqs 8,` look harmless in a profile form.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --max-model-len 32q
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --max-model-len 32k
    ```
    """
    for vc, problem in problems(ctx, ArgProblemKind.WRONG_TYPE):
        option = problem.option
        name = option.key.text if option else "the option"
        yield Hit(
            problem.text.span(fallback=option.word.span() if option else None),
            f"{vllm_label(vc.args.catalog)} refuses to start {AT_PARSE}: {name}: {problem.message}",
            problem.data,
            path=vc.path,
        )
