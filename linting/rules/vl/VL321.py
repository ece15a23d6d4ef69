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


@rule("VL321", Severity.ERROR)
def invalid_choice(ctx: UnitContext) -> Iterator[Hit]:
    """
    A value outside the choices of an option (e.g. `--dtype`, `--kv-cache-dtype`,
    `--quantization`).

    What it does:
    Checks values against argparse `choices` of the target version; for `--quantization`,
    which has no argparse choices from 0.11 on, against vLLM's list of quantization methods.

    Why is this bad?
    With argparse choices `vllm serve` exits with "invalid choice" before anything is
    loaded. Without them (quantization in 0.11+) the value passes argument parsing and vLLM
    fails at engine start with "Unknown quantization method" (ModelConfig).

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --kv-cache-dtype fp8-e4m3
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --kv-cache-dtype fp8_e4m3
    ```
    """
    for vc, problem in problems(ctx, ArgProblemKind.INVALID_CHOICE, ArgProblemKind.RUNTIME_CHOICE):
        catalog = vc.args.catalog
        hint = f"; did you mean `{problem.suggestion}`?" if problem.suggestion else ""
        if problem.kind == ArgProblemKind.INVALID_CHOICE:
            message = f"{vllm_label(catalog)} refuses to start {AT_PARSE}: {problem.message}{hint}"
        else:
            message = (
                f"{problem.message}: argparse accepts it, then vLLM refuses to start when it "
                "builds the engine config, with "
                f'"Unknown quantization method: {problem.text.text}"{hint}'
            )
        yield Hit(problem.text.span(), message, problem.data, path=vc.path)
