from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.vl._commands import problems
from linting.vllm.invocation import (
    ArgProblemKind,
)


@rule("VL327", Severity.ERROR)
def serve_model_option(ctx: UnitContext) -> Iterator[Hit]:
    """
    `vllm serve … --model X` on vLLM versions that refuse it (0.8.x–0.11).

    What it does:
    Finds the exact word `--model` in a `vllm serve` command when the target version's
    parser rejects it.

    Why is this bad?
    FlexibleArgumentParser raises "With `vllm serve`, you should provide the model as a
    positional argument…" before argparse runs (vllm/utils/__init__.py:1856 in 0.11.0).
    0.16+ move `--model X` to the positional with a deprecation warning.

    Example:
    ```ini
    # with vLLM 0.11.0
    ExecStart=/opt/vllm/bin/vllm serve --model /models/m
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```
    """
    for vc, problem in problems(ctx, ArgProblemKind.MODEL_OPTION):
        yield Hit(problem.text.span(), problem.message, path=vc.path)
