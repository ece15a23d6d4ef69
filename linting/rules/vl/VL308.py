from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.vl._messages import vllm_label
from linting.rules.vl._spec import spec_data


@rule("VL308", Severity.WARNING)
def speculative_method_deprecated(ctx: UnitContext) -> Iterator[Hit]:
    """
    A model-specific `*_mtp` speculative method that vLLM rewrites to `mtp`.

    What it does:
    Finds `method` values such as `deepseek_mtp` or `qwen3_next_mtp` that the target
    version still accepts but logs as deprecated.

    Why is this bad?
    vLLM logs "method `deepseek_mtp` is deprecated and replaced with mtp" and runs `mtp`
    (vllm/config/speculative.py:214 in 0.11.0, :294 in 0.16.0, :1248 in 0.33.0). The
    aliases are kept for compatibility and may be removed; the profile should say `mtp`.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "deepseek_mtp", "num_speculative_tokens": 1}'
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "mtp", "num_speculative_tokens": 1}'
    ```
    """
    for vc in ctx.vllm_commands:
        view = vc.args.spec_view
        catalog = vc.args.catalog
        if view is None or catalog.speculative_config.unknown_keys == "type_error":
            continue  # 0.8.5 has no `mtp` method to rewrite to
        entry = view.entries.get("method")
        if entry is None or not isinstance(entry.value, str):
            continue
        method = entry.value
        if method.endswith("_mtp") and method in catalog.speculative_config.methods_accepted:
            yield Hit(
                entry.value_text.span(),
                f'{vllm_label(catalog)} logs "method `{method}` is deprecated and replaced with '
                'mtp" and runs method \'mtp\'; write "mtp"',
                spec_data(view),
                path=vc.path,
            )
