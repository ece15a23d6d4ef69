from __future__ import annotations

import difflib
from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.vl._messages import AT_ENGINE, shown, vllm_label
from linting.rules.vl._spec import effective_method, effective_value, known_fields, spec_data
from linting.vllm.invocation import (
    SpecEntry,
)


def _where(entry: SpecEntry) -> str:
    return "the key " if entry.origin == "json" else "the dotted key "


@rule("VL302", Severity.ERROR)
def speculative_config_unknown_key(ctx: UnitContext) -> Iterator[Hit]:
    """
    A key in `--speculative-config` that this vLLM version's SpeculativeConfig lacks.

    What it does:
    Compares every key of the speculative config (JSON, dotted `--speculative-config.key`
    form) with the fields of SpeculativeConfig in the target version, and suggests the
    closest field.

    Why is this bad?
    What happens depends on the version: 0.8.x raises `TypeError: unexpected keyword
    argument` at engine start; 0.11–0.15 use a pydantic dataclass with `extra='ignore'`
    and **silently drop the key**, so a different config runs than the one written
    (a misspelt `prompt_lookup_max` leaves ngram at its default 5); 0.16 and later forbid
    extra keys and refuse to start with pydantic's "Unexpected keyword argument".

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "ngram", "num_speculative_tokens": 5, "promt_lookup_max": 4}'
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4}'
    ```
    """
    for vc in ctx.vllm_commands:
        view = vc.args.spec_view
        if view is None:
            continue
        catalog = vc.args.catalog
        spec = catalog.speculative_config
        fields = known_fields(catalog)
        for key, entry in view.entries.items():
            if key in spec.fields or key == "tensor_parallel_size":  # VL305
                continue
            close = difflib.get_close_matches(key, fields, n=1, cutoff=0.6)
            suggestion = close[0] if close else None
            did_you_mean = f"; did you mean `{suggestion}`?" if suggestion else ""
            where = _where(entry)
            if spec.unknown_keys == "ignored":
                effect = ""
                if suggestion and suggestion not in view.entries:
                    runs = effective_value(view, catalog, suggestion)
                    method = effective_method(view) or "speculative decoding"
                    effect = f": {method} runs with {suggestion}={shown(runs)}"
                message = (
                    f"{vllm_label(catalog)} silently ignores {where}`{entry.key}` (SpeculativeConfig "
                    f"drops unknown keys){effect}, not the config written{did_you_mean}"
                )
            elif spec.unknown_keys == "type_error":
                message = (
                    f'{vllm_label(catalog)} refuses to start {AT_ENGINE}: "TypeError: '
                    f"SpeculativeConfig.__init__() got an unexpected keyword argument "
                    f"'{entry.key}'\"{did_you_mean}"
                )
            else:
                message = (
                    f'{vllm_label(catalog)} refuses to start {AT_ENGINE}: pydantic "Unexpected '
                    f'keyword argument" for {where}`{entry.key}`{did_you_mean}'
                )
            yield Hit(
                entry.key_text.span(),
                message,
                {
                    **spec_data(view),
                    "key": entry.key,
                    "suggestion": suggestion,
                    "unknown_keys": spec.unknown_keys,
                },
                path=vc.path,
            )
