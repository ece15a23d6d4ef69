from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.vl._messages import AT_ENGINE, shown, vllm_label
from linting.rules.vl._spec import spec_data


@rule("VL307", Severity.ERROR)
def spec_shorthand_conflict(ctx: UnitContext) -> Iterator[Hit]:
    """
    `--spec-method/--spec-model/--spec-tokens` together with the same key in
    `--speculative-config` (vLLM 0.33+).

    What it does:
    Finds a shorthand flag whose key is also set in the speculative config JSON.

    Why is this bad?
    vLLM raises "ValueError: --spec-tokens and --speculative-config['num_speculative_tokens']
    are mutually exclusive" at engine start (vllm/engine/arg_utils.py:2116 in 0.33.0).

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --spec-tokens 4 --speculative-config '{"method": "ngram", "num_speculative_tokens": 5}'
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "ngram", "num_speculative_tokens": 5}'
    ```
    """
    for vc in ctx.vllm_commands:
        view = vc.args.spec_view
        if view is None:
            continue
        # The check uses the keys as written, before 0.33's `-`→`_` rewrite
        # (vllm/engine/arg_utils.py:2116 vs :2126 in 0.33.0).
        written = {e.key for e in view.source.entries}
        for entry, flag in view.shorthand:
            if entry.key not in written:
                continue
            other = next(e for e in view.source.entries if e.key == entry.key)
            yield Hit(
                entry.key_text.span(),
                f'{vllm_label(vc.args.catalog)} refuses to start {AT_ENGINE}: "ValueError: {flag} '
                f"and --speculative-config['{entry.key}'] are mutually exclusive\" "
                f"(--speculative-config sets it to {shown(other.value)})",
                spec_data(view),
                path=vc.path,
            )
