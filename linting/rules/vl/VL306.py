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

_LEGACY_KEYS = {
    "--speculative-model": "model",
    "--num-speculative-tokens": "num_speculative_tokens",
    "--ngram-prompt-lookup-max": "prompt_lookup_max",
    "--ngram-prompt-lookup-min": "prompt_lookup_min",
}


@rule("VL306", Severity.ERROR)
def removed_speculative_flag(ctx: UnitContext) -> Iterator[Hit]:
    """
    A speculative decoding flag that vLLM removed (`--speculative-model`, …).

    What it does:
    Finds the pre-0.8 flags `--speculative-model`, `--num-speculative-tokens`,
    `--ngram-prompt-lookup-max`, `--ngram-prompt-lookup-min`.

    Why is this bad?
    They no longer exist; argparse exits with "unrecognized arguments" before anything
    is loaded. Their settings are keys of `--speculative-config` now.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-model "[ngram]" --num-speculative-tokens 5
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "ngram", "num_speculative_tokens": 5}'
    ```
    """
    for vc, problem in problems(ctx, ArgProblemKind.REMOVED_FLAG):
        key = problem.data["flag"]
        new = _LEGACY_KEYS.get(key)
        instead = f'; write it as the key "{new}" of --speculative-config' if new else ""
        yield Hit(
            problem.text.span(),
            f"`{key}` was removed from vLLM: {vllm_label(vc.args.catalog)} refuses to start "
            f'{AT_PARSE} ("unrecognized arguments"){instead}',
            path=vc.path,
        )
