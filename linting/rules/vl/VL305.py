from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.vl._messages import AT_ENGINE, vllm_label
from linting.rules.vl._spec import spec_data


@rule("VL305", Severity.ERROR)
def speculative_tensor_parallel_size(ctx: UnitContext) -> Iterator[Hit]:
    """
    `tensor_parallel_size` inside `--speculative-config`.

    What it does:
    Finds the key `tensor_parallel_size` in the speculative config.

    Why is this bad?
    The draft model's parallelism is `draft_tensor_parallel_size`. 0.16+ refuse to start
    with "'tensor_parallel_size' is not a valid argument in the speculative_config"
    (vllm/config/speculative.py:658 in 0.16.0); 0.11 silently ignores it, so the draft runs
    with vLLM's default; 0.8.5 raises TypeError.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m -tp 4 --speculative-config '{"model": "/models/draft", "num_speculative_tokens": 4, "tensor_parallel_size": 1}'
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m -tp 4 --speculative-config '{"model": "/models/draft", "num_speculative_tokens": 4, "draft_tensor_parallel_size": 1}'
    ```
    """
    for vc in ctx.vllm_commands:
        view = vc.args.spec_view
        if view is None or "tensor_parallel_size" not in view.entries:
            continue
        entry = view.entries["tensor_parallel_size"]
        catalog = vc.args.catalog
        mode = catalog.speculative_config.unknown_keys
        if "tensor_parallel_size" in catalog.speculative_config.fields:
            what = (
                f"{vllm_label(catalog)} refuses to start {AT_ENGINE}: \"'tensor_parallel_size' is not "
                "a valid argument in the speculative_config. Please pass "
                "'draft_tensor_parallel_size' instead.\""
            )
        elif mode == "ignored":
            what = (
                f"{vllm_label(catalog)} silently ignores `tensor_parallel_size` in the speculative "
                "config: the draft model runs with the default draft_tensor_parallel_size, "
                "not the one written; use `draft_tensor_parallel_size`"
            )
        else:
            what = (
                f'{vllm_label(catalog)} refuses to start {AT_ENGINE}: "TypeError: unexpected keyword '
                "argument 'tensor_parallel_size'\"; use `draft_tensor_parallel_size`"
            )
        yield Hit(entry.key_text.span(), what, spec_data(view), path=vc.path)
