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


@rule("VL320", Severity.ERROR)
def unknown_flag(ctx: UnitContext) -> Iterator[Hit]:
    """
    An option the target vLLM version does not have.

    What it does:
    Resolves every option word the way `vllm serve` does (`_`→`-`, `--x=v`, unique
    abbreviations, `-O3`, dotted JSON keys) against the version's catalog; reports
    unknown and ambiguous ones with the closest known option.

    Why is this bad?
    argparse exits with "unrecognized arguments" (or "ambiguous option") before anything
    is loaded. Options are renamed between versions, so a unit that worked on one vLLM
    fails on the next.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --gpu-memory-utilisation 0.9
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --gpu-memory-utilization 0.9
    ```
    """
    for vc, problem in problems(ctx, ArgProblemKind.UNKNOWN_FLAG, ArgProblemKind.AMBIGUOUS_FLAG):
        catalog = vc.args.catalog
        word = problem.text.text.partition("=")[0]
        if problem.kind == ArgProblemKind.AMBIGUOUS_FLAG:
            message = f"{vllm_label(catalog)} refuses to start {AT_PARSE}: {problem.message}"
        else:
            hint = f"; did you mean `{problem.suggestion}`?" if problem.suggestion else ""
            message = (
                f"{vllm_label(catalog)} refuses to start {AT_PARSE}: argparse reports "
                f'"unrecognized arguments: {word}"{hint}'
            )
        yield Hit(
            problem.text[: len(word)].span(),
            message,
            {"suggestion": problem.suggestion, **problem.data},
            path=vc.path,
        )
